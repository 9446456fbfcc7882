// libcanopy_nccl.so as a program sees it (opened at run time by Canopy's NCCL loader, runtime/cuda/nccl_loader, as
// the bench opens an NCCL by name; no GPU or driver needed): its SONAME is libnccl.so.2; it defines every function
// the toolkit's nccl.h declares, each with its pncclXxx alias, and the names PyTorch 2.11 imports; it exports nothing
// else; it answers ncclGetVersion and ncclGetErrorString. Paths: CANOPY_NCCL_LIBRARY_FILE (the built library),
// CANOPY_NCCL_HEADER (nccl.h), from tests/CMakeLists.txt. The loader of the real NCCL refuses it.
#include <gtest/gtest.h>
#include <nccl.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "core/version.hpp"
#include "runtime/cuda/nccl_loader.hpp"
#include "runtime/hosts/nccl_library.hpp"

namespace {

std::string run(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  pclose(p);
  return out;
}

// The functions nccl.h declares: lines "RESULT  ncclXxx(" or "RESULT pncclXxx(".
std::set<std::string> header_functions() {
  std::ifstream in(CANOPY_NCCL_HEADER);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::set<std::string> names;
  const std::regex decl(R"(^(?:ncclResult_t|const char\*|void)\s+(p?nccl\w+)\s*\()", std::regex::multiline);
  for (auto it = std::sregex_iterator(s.begin(), s.end(), decl); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1]);
  return names;
}

// Defined dynamic symbols of the built library.
std::set<std::string> exported() {
  std::set<std::string> names;
  std::istringstream lines(run(std::string("nm -D --defined-only ") + CANOPY_NCCL_LIBRARY_FILE));
  std::string address, type, name;
  while (lines >> address >> type >> name) names.insert(name);
  return names;
}

std::string g_why_not;  // why library() is nullptr

const canopy::LoadedNccl* library() {
  static const canopy::LoadedNccl* lib = [] {
    // A missing path: the real NCCL is never found, so the answers are Canopy's own.
    setenv("CANOPY_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    return canopy::open_nccl(CANOPY_NCCL_LIBRARY_FILE, canopy::CanopyNccl::allowed, canopy::any_nccl, &g_why_not);
  }();
  return lib;
}

TEST(NcclExports, SonameIsLibnccl2) {
  const std::string dynamic = run(std::string("readelf -d ") + CANOPY_NCCL_LIBRARY_FILE);
  EXPECT_NE(dynamic.find("Library soname: [libnccl.so.2]"), std::string::npos) << dynamic;
}

TEST(NcclExports, EveryFunctionOfNcclHIsExportedWithItsAlias) {
  const std::set<std::string> declared = header_functions();
  ASSERT_GE(declared.size(), 76u) << "nccl.h at " << CANOPY_NCCL_HEADER << " declares fewer functions than 2.28's";
  const std::set<std::string> have = exported();
  for (const std::string& name : declared) EXPECT_TRUE(have.count(name)) << name << " is declared but not exported";
  std::printf("nccl.h declares %zu functions (with pnccl aliases); the library exports %zu symbols\n", declared.size(),
              have.size());
}

TEST(NcclExports, NamesTorchImportsAreDefined) {
  for (const char* name :
       {"ncclAllGather", "ncclAllReduce", "ncclAlltoAll", "ncclBcast", "ncclBroadcast", "ncclCommAbort",
        "ncclCommCount", "ncclCommDeregister", "ncclCommDestroy", "ncclCommFinalize", "ncclCommGetAsyncError",
        "ncclCommInitAll", "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitRankScalable",
        "ncclCommRegister", "ncclCommShrink", "ncclCommSplit", "ncclCommUserRank", "ncclCommWindowDeregister",
        "ncclCommWindowRegister", "ncclDevCommCreate", "ncclDevCommDestroy", "ncclGetErrorString",
        "ncclGetLastError", "ncclGetUniqueId", "ncclGetVersion", "ncclGroupEnd", "ncclGroupSimulateEnd",
        "ncclGroupStart", "ncclMemAlloc", "ncclMemFree", "ncclRecv", "ncclRedOpCreatePreMulSum", "ncclRedOpDestroy",
        "ncclReduce", "ncclReduceScatter", "ncclSend", "ncclCommCuDevice"}) {
    ASSERT_NE(library(), nullptr) << g_why_not;
    EXPECT_NE(library()->symbol(name), nullptr) << name;
  }
}

TEST(NcclExports, NothingButNcclNamesIsExported) {
  for (const std::string& name : exported())
    EXPECT_TRUE(name.rfind("nccl", 0) == 0 || name.rfind("pnccl", 0) == 0) << name << " leaks out of the library";
}

TEST(NcclExports, AnswersVersionAndErrorStringsWithoutAGpu) {
  ASSERT_NE(library(), nullptr) << g_why_not;
  auto get_version = reinterpret_cast<ncclResult_t (*)(int*)>(library()->symbol("ncclGetVersion"));
  auto error_string = reinterpret_cast<const char* (*)(ncclResult_t)>(library()->symbol("ncclGetErrorString"));
  ASSERT_TRUE(get_version && error_string);
  int version = 0;
  EXPECT_EQ(get_version(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);  // no real NCCL: the header's
  EXPECT_STREQ(error_string(ncclSuccess), "no error");
  EXPECT_NE(std::string(error_string(ncclInvalidUsage)).find("invalid usage"), std::string::npos);
  EXPECT_STREQ(error_string(static_cast<ncclResult_t>(99)), "unknown result code");
  EXPECT_EQ(get_version(nullptr), ncclInvalidArgument);
}

}  // namespace

// The loader of the real NCCL (runtime/cuda/nccl_loader.cpp), and so the rails between hosts that use it
// (runtime/hosts/nccl_library.cpp), refuse this library, whose SONAME is libnccl.so.2 too: it exports
// ncclCanopyOwnLibrary, and the loader asks for it.
TEST(NcclExports, TheRuntimesNcclLoaderNeverTakesThisLibraryForTheRealOne) {
  setenv("CANOPY_NCCL_LIBRARY", CANOPY_NCCL_LIBRARY_FILE, 1);
  std::string why_not;
  EXPECT_EQ(canopy::find_real_nccl(canopy::any_nccl, &why_not), nullptr);
  EXPECT_NE(why_not.find("is Canopy's own libnccl.so.2"), std::string::npos) << why_not;
  const canopy::NcclLibrary* lib = nullptr;
  const canopy::Status s = canopy::open_nccl_library(&lib);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is Canopy's own libnccl.so.2"), std::string::npos) << s.message();
  ASSERT_NE(library(), nullptr) << g_why_not;
  EXPECT_NE(library()->symbol("ncclCanopyOwnLibrary"), nullptr);
}

// ncclCanopyStatus (what `canopy.torch.status()` reads): JSON naming the library, its version and the live Canopy
// communicators; with none made, an empty list.
TEST(NcclExports, StatusSaysTheLibraryAndItsCommunicators) {
  ASSERT_NE(library(), nullptr) << g_why_not;
  auto status = reinterpret_cast<const char* (*)()>(library()->symbol("ncclCanopyStatus"));
  ASSERT_NE(status, nullptr) << "ncclCanopyStatus is not exported";
  const std::string text = status();
  EXPECT_NE(text.find("\"library\":\"libcanopy_nccl\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"version\":\"" CANOPY_VERSION "\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"communicators\":[]"), std::string::npos) << text;
}
