// Model archives read with libzip before LibTorch's reader sees them: LibTorch 1.13's reader
// checks no CRC (a flipped byte loads as a changed weight), trusts declared sizes (a 1 MB archive
// declaring a 1 GB entry drives gigabytes of allocation) and leaks on some malformed archives.
//
// zip_entry_names(path), zip_entry_names_of(bytes)
//   post: the entry names in central-directory order, or nothing when libzip cannot open the
//         archive consistently (ZIP_CHECKCONS). Never throws on file contents.
// verify_zip_archive(path)
//   post: "" when every entry's declared size is plausible and its data matches its CRC-32;
//         otherwise one line saying what is wrong with which entry ("corrupt zip archive (entry
//         'm/data/0' fails its CRC-32 check: ...)", "truncated or corrupt zip archive (its central
//         directory is missing)"). Reads every entry once. Never throws on contents.
//   Declared sizes: an entry may expand at most kMaxExpansion times its compressed size (at least
//   1 MiB), and the archive at most kMaxArchiveBytes in all.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::model {

inline constexpr uint64_t kMaxExpansion = 1024;
inline constexpr uint64_t kMaxArchiveBytes = 64ull << 30;

std::optional<std::vector<std::string>> zip_entry_names(const std::string& path);
std::optional<std::vector<std::string>> zip_entry_names_of(const std::string& bytes);
std::string verify_zip_archive(const std::string& path);

}  // namespace kiln::model
