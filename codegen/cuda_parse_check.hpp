// check_cuda_source: a generated CUDA translation unit + its in-memory headers -> every diagnostic (errors and
// -Wall warnings) Clang raises when it parses them as NVRTC sees them: device code for sm_XX (sm_90 by default).
// Any diagnostic is a bug in Canopy's generator or templates, not in the user's input, and is reported with its
// file, line, column and source line. Syntax and semantics only: NVRTC and ptxas still judge what compiles.
#pragma once

#include <string>
#include <vector>

#include "codegen/source_file.hpp"

namespace canopy {

struct SourceDiagnostic {
  std::string file;                // SourceFile::name of the main file or of the header it is in
  int line = 0;                    // 1-based
  int column = 0;                  // 1-based, in bytes
  std::string severity;            // "error" | "warning"
  std::string message;             // Clang's text; warnings end with their flag, e.g. [-Wunused-variable]
  std::string source_line;         // the text of `line`, without its newline
  std::vector<std::string> notes;  // "FILE:LINE:COL: note: ..." Clang attached (e.g. where a template was used)
};

// Diagnostics in the order Clang reports them; empty when the source is clean. `#include "NAME"` resolves only to
// `headers`, by their names, never to disk. Throws canopy::Error when Clang cannot run at all (its resource
// directory is missing, Clang 19 does not know `arch`).
std::vector<SourceDiagnostic> check_cuda_source(const SourceFile& main, const std::vector<SourceFile>& headers,
                                                const std::string& arch = "sm_90");

// "FILE:LINE:COL: error: MESSAGE\n  SOURCE LINE", then "\n  NOTE" for each note.
std::string to_string(const SourceDiagnostic& diagnostic);

}  // namespace canopy
