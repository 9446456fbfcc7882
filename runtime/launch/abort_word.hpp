// AbortWord: one word of pinned host memory mapped for the GPUs, which every launch of a communicator receives
// (DeviceArgs::abort). Setting it makes every wait of every running and later kernel give up (templates/flags.cuh:
// give_up), so kernels waiting for a process that died, or for a call the host aborted, end and leave the GPU usable.
// Their outputs are then undefined: the communicator that sets it is finished.
#pragma once

namespace canopy {

class AbortWord {
 public:
  AbortWord();  // throws canopy::Error when pinned, mapped host memory cannot be had
  ~AbortWord();
  AbortWord(const AbortWord&) = delete;
  AbortWord& operator=(const AbortWord&) = delete;

  const unsigned int* device() const { return device_; }  // for DeviceArgs
  void set();                                              // from any thread

 private:
  unsigned int* host_ = nullptr;
  const unsigned int* device_ = nullptr;
};

}  // namespace canopy
