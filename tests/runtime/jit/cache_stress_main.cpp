// canopy_cache_stress DIR PROCESS COUNT: one of the processes the concurrency test starts at once. It compiles
// COUNT tiny kernels through DiskCache::load_or_compile with NVRTC: every fourth is this process's own (numbered
// 100 + 20 * PROCESS + i), the others come from 10 sources every process shares, so processes collide on keys. It
// appends a line to DIR/compiles.log for every real compile and prints each kernel's number and cubin sha256.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "core/sha256.hpp"
#include "runtime/jit/cache_key.hpp"
#include "runtime/jit/disk_cache.hpp"

int main(int argc, char** argv) {
  using namespace canopy;
  if (argc != 4) {
    fmt::print(stderr, "usage: canopy_cache_stress DIR PROCESS COUNT\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int process = std::atoi(argv[2]), count = std::atoi(argv[3]);
  DiskCache disk(dir);
  for (int i = 0; i < count; ++i) {
    const int which = i % 4 == 3 ? 100 + 20 * process + i : (i * 7 + process * 3) % 10;
    const SourceFile source{fmt::format("k{}.cu", which),
                            fmt::format("extern \"C\" __global__ void k{0}(float* p) {{ p[threadIdx.x] *= {0}.5f; }}\n", which)};
    const CompileOptions options;
    const std::string key = compile_cache_key(source, {}, options);
    const CompiledModule m = disk.load_or_compile(key, source.name, options.arch, [&] {
      const int fd = ::open((dir + "/compiles.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      const std::string line = key + "\n";
      if (fd >= 0) (void)!::write(fd, line.data(), line.size()), ::close(fd);
      return compile_cuda(source, {}, options);
    });
    fmt::print("{} {}\n", which, sha256_hex(m.cubin));
  }
  return 0;
}
