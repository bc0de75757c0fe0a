// The entry names of a zip archive's central directory, read without LibTorch: load_model checks
// them before LibTorch's reader sees a file (its reader leaks on some malformed archives).
//
// zip_entry_names(path)
//   post: the names in central-directory order, or nothing when the directory cannot be read simply
//         (no end record in the last 64 KiB, zip64, offsets or lengths past the file's end, a damaged
//         entry): the caller then lets LibTorch decide and explain. Never throws on file contents.
// zip_entry_names_of(bytes): the same over an archive held in memory (fuzzed: fuzz/fuzz_zip_directory).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kiln::model {

std::optional<std::vector<std::string>> zip_entry_names(const std::string& path);
std::optional<std::vector<std::string>> zip_entry_names_of(const std::string& bytes);

}  // namespace kiln::model
