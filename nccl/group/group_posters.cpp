// Long-lived poster threads for ncclGroupEnd (group_posters.hpp).
#include "nccl/group/group_posters.hpp"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

namespace canopy::nccl_api {

namespace {

class Posters {
 public:
  void run(const std::vector<std::function<void()>>& jobs) {
    std::lock_guard<std::mutex> one_run(run_mutex_);
    if (jobs.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (workers_.size() + 1 < jobs.size()) {
        const std::size_t k = workers_.size() + 1;
        workers_.push_back(std::thread([this, k] { work(k); }));
        workers_.back().detach();
      }
      jobs_ = &jobs;
      left_ = jobs.size() - 1;
      ++generation_;
    }
    wake_.notify_all();
    jobs[0]();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return left_ == 0; });
    jobs_ = nullptr;
  }

 private:
  void work(std::size_t k) {
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (!jobs_ || k >= jobs_->size()) continue;  // this run needs fewer workers
      const std::function<void()>& job = (*jobs_)[k];
      lock.unlock();
      job();
      lock.lock();
      if (--left_ == 0) done_.notify_one();
    }
  }

  std::mutex run_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;  // detached; kept only to count them
  const std::vector<std::function<void()>>* jobs_ = nullptr;
  std::size_t left_ = 0;
  std::uint64_t generation_ = 0;
};

}  // namespace

void run_at_once(const std::vector<std::function<void()>>& jobs) {
  std::vector<std::jthread> others;  // joined when they go
  for (std::size_t k = 1; k < jobs.size(); ++k) others.emplace_back(jobs[k]);
  if (!jobs.empty()) jobs[0]();
}

void run_on_posters(const std::vector<std::function<void()>>& jobs) {
  static Posters* posters = new Posters();  // never destroyed: its workers may outlive static destruction
  posters->run(jobs);
}

}  // namespace canopy::nccl_api
