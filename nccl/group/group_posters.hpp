// GroupPosters: the threads that post a group's calls when one thread's ncclGroupEnd holds calls of several
// communicators joined across processes (nccl-tests -g N: one rank of each in this process, a GPU each), where a
// rank's call may wait on the host for the other ranks' (group.cpp). run() hands job 0 to the calling thread and job
// k > 0 to worker k, made on first need and kept for the life of the process (a group end costs two wake-ups, not
// thread starts), and returns when every job has. One run at a time; the workers are never joined: they sleep on a
// condition variable of an object that is never destroyed, so the process may exit at any moment. run_at_once does
// the same on fresh threads, for the group's joins and splits.
#pragma once

#include <functional>
#include <vector>

namespace canopy::nccl_api {

void run_on_posters(const std::vector<std::function<void()>>& jobs);
// The same on fresh threads (job 0 on the caller's), any number of runs at once: for jobs that may wait long for
// other processes (a group's joins and splits), which would hold the posters' one run at a time meanwhile.
void run_at_once(const std::vector<std::function<void()>>& jobs);

}  // namespace canopy::nccl_api
