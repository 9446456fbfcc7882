// The one loader of NCCL (runtime/cuda/nccl_loader.hpp) on any CPU, with the stand-in real NCCL of the NCCL API's
// tests (tests/nccl/fake_real_nccl.cpp, CANOPY_FAKE_REAL_NCCL): a library named by CANOPY_NCCL_LIBRARY is taken by
// its resolved path, once per process; a typed table is filled through NcclBinder; a file that is missing, is not
// NCCL, or lacks a function its user calls is refused with a reason naming the variable, the file and the function.
// Canopy's own libcanopy_nccl.so is refused in tests/nccl/nccl_exports_test.cpp, which builds beside it.
#include "runtime/cuda/nccl_loader.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/cuda/nccl_locations.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// CANOPY_NCCL_LIBRARY set to `value` while the object lives.
struct LibraryVariable {
  explicit LibraryVariable(const char* value) { setenv("CANOPY_NCCL_LIBRARY", value, 1); }
  ~LibraryVariable() { unsetenv("CANOPY_NCCL_LIBRARY"); }
};

TEST(NcclLoader, TheVariablesLibraryIsTakenByItsResolvedPathOncePerProcess) {
  LibraryVariable v(CANOPY_FAKE_REAL_NCCL);
  std::string why_not = "stale";
  const LoadedNccl* lib = find_real_nccl(any_nccl, &why_not);
  ASSERT_NE(lib, nullptr) << why_not;
  EXPECT_EQ(why_not, "");
  EXPECT_EQ(lib->path(), canonical_or_empty(CANOPY_FAKE_REAL_NCCL));
  EXPECT_GT(lib->version(), 20000);  // the stand-in answers nccl.h's NCCL_VERSION_CODE
  const int code = lib->version();
  EXPECT_EQ(lib->version_text(), std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
                                     std::to_string(code % 100));
  EXPECT_EQ(find_real_nccl(any_nccl, &why_not), lib);
  EXPECT_EQ(open_nccl(lib->path(), CanopyNccl::refused, any_nccl, &why_not), lib) << why_not;
}

TEST(NcclLoader, ABinderFillsAUsersTableOfFunctions) {
  LibraryVariable v(CANOPY_FAKE_REAL_NCCL);
  struct Table {
    int (*group_start)() = nullptr;
    int (*group_end)() = nullptr;
  } table;
  std::string why_not;
  const LoadedNccl* lib = find_real_nccl(
      [&](const LoadedNccl& l) {
        NcclBinder bind(l);
        bind("ncclGroupStart", &table.group_start)("ncclGroupEnd", &table.group_end);
        return bind.error();
      },
      &why_not);
  ASSERT_NE(lib, nullptr) << why_not;
  ASSERT_TRUE(table.group_start && table.group_end);
  EXPECT_EQ(table.group_start(), 0);
  EXPECT_EQ(table.group_end(), 0);
  EXPECT_EQ(table.group_start, lib->symbol("ncclGroupStart"));
}

TEST(NcclLoader, ALibraryLackingAFunctionItsUserCallsIsRefusedNamingTheFileAndTheFunction) {
  LibraryVariable v(CANOPY_FAKE_REAL_NCCL);
  std::string why_not;
  int (*absent)() = nullptr;
  const auto check = [&](const LoadedNccl& l) { return NcclBinder(l)("ncclCanopyTestAbsent", &absent).error(); };
  EXPECT_EQ(find_real_nccl(check, &why_not), nullptr);
  EXPECT_EQ(why_not, "CANOPY_NCCL_LIBRARY: '" + canonical_or_empty(CANOPY_FAKE_REAL_NCCL) +
                         "' lacks ncclCanopyTestAbsent: not an NCCL library (or one too old): point "
                         "CANOPY_NCCL_LIBRARY at the real NCCL's libnccl.so.2 (e.g. "
                         "site-packages/nvidia/nccl/lib/libnccl.so.2)");
  EXPECT_EQ(absent, nullptr);
}

TEST(NcclLoader, AMissingVariableFileIsRefusedNamingTheVariable) {
  LibraryVariable v("/nonexistent/libnccl.so.2");
  std::string why_not;
  EXPECT_EQ(find_real_nccl(any_nccl, &why_not), nullptr);
  EXPECT_THAT(why_not, StartsWith("CANOPY_NCCL_LIBRARY: '/nonexistent/libnccl.so.2' does not exist: point "
                                  "CANOPY_NCCL_LIBRARY at the real NCCL's libnccl.so.2"));
}

TEST(NcclLoader, ALibraryWithoutNcclGetVersionIsNotNccl) {
  std::string why_not;
  EXPECT_EQ(open_nccl("libm.so.6", CanopyNccl::allowed, any_nccl, &why_not), nullptr);
  EXPECT_EQ(why_not, "'libm.so.6' lacks ncclGetVersion: not an NCCL library (or one too old)");
}

TEST(NcclLoader, ANameTheDynamicLoaderCannotFindIsRefusedWithItsReason) {
  std::string why_not;
  EXPECT_EQ(open_nccl("libnccl-absent-for-canopy-tests.so.2", CanopyNccl::allowed, any_nccl, &why_not), nullptr);
  EXPECT_THAT(why_not, StartsWith("cannot open 'libnccl-absent-for-canopy-tests.so.2': "));
  EXPECT_THAT(why_not, HasSubstr("libnccl-absent-for-canopy-tests.so.2"));
}

}  // namespace
}  // namespace canopy
