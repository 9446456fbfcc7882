// CallCounters through memfd pages passed over the FdChannel, and StallWatch (see call_counters.hpp).
#include "runtime/comm/call_counters.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace canopy {
namespace {

constexpr std::size_t kPage = 4096;
constexpr std::uint32_t kCountersTag = 0x80000001u;  // beside IpcPeerMemory's steps (small numbers from 1)

std::atomic<std::uint64_t>* counter(void* page) { return static_cast<std::atomic<std::uint64_t>*>(page); }

}  // namespace

Status CallCounters::share(FdChannel& channel, int process, int processes, std::unique_ptr<CallCounters>* out) {
  std::unique_ptr<CallCounters> c(new CallCounters());
  c->process_ = process;
  c->pages_.assign(processes, nullptr);
  const int fd = memfd_create("canopy-call-counters", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, kPage) != 0) {
    const int e = errno;
    if (fd >= 0) close(fd);
    return Status(StatusCode::internal, fmt::format("the call counters' shared page: {}", std::strerror(e)));
  }
  void* mine = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mine == MAP_FAILED) {
    close(fd);
    return Status(StatusCode::internal, fmt::format("mapping the call counters' page: {}", std::strerror(errno)));
  }
  c->pages_[process] = mine;
  new (mine) std::atomic<std::uint64_t>(0);
  std::vector<int> others;
  for (int p = 0; p < processes; ++p)
    if (p != process) others.push_back(p);
  const auto map_page = [&](int p, FdMessage& m) {
    if (m.fds.size() != 1)
      return Status(StatusCode::internal,
                    fmt::format("process {} sent {} descriptors for its call counter", p, m.fds.size()));
    void* page = mmap(nullptr, kPage, PROT_READ, MAP_SHARED, m.fds[0].get(), 0);
    if (page == MAP_FAILED)
      return Status(StatusCode::internal,
                    fmt::format("mapping process {}'s call counter: {}", p, std::strerror(errno)));
    c->pages_[p] = page;
    return Status();
  };
  const Status s = channel.exchange(kCountersTag, std::span<const int>(&fd, 1), "calls", others, others, map_page);
  close(fd);
  if (!s.ok()) return s;  // the destructor unmaps what was mapped
  *out = std::move(c);
  return Status();
}

CallCounters::~CallCounters() {
  for (void* p : pages_)
    if (p) munmap(p, kPage);
}

void CallCounters::publish(std::uint64_t calls) { counter(pages_[process_])->store(calls, std::memory_order_release); }

std::uint64_t CallCounters::of(int process) const {
  return counter(pages_[process])->load(std::memory_order_acquire);
}

int StallWatch::check(std::chrono::steady_clock::time_point now, int self, std::uint64_t mine,
                      std::span<const std::uint64_t> theirs) {
  if (last_.size() != theirs.size()) {
    last_.assign(theirs.begin(), theirs.end());
    since_.assign(theirs.size(), now);
  }
  int stalled = -1;
  for (std::size_t p = 0; p < theirs.size(); ++p) {
    if (theirs[p] != last_[p]) {
      last_[p] = theirs[p];
      since_[p] = now;
    }
    if (static_cast<int>(p) == self || theirs[p] >= mine) continue;
    if (stalled < 0 && now - since_[p] >= limit_) stalled = static_cast<int>(p);
  }
  return stalled;
}

std::chrono::milliseconds StallWatch::still_for(int p, std::chrono::steady_clock::time_point now) const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - since_.at(p));
}

}  // namespace canopy
