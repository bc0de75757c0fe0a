// The on-disk kernel cache: where compiled kernels (C++ shared libraries, CUDA cubins) are kept
// between runs, and the checks that make loading them safe. Whatever Kiln loads from here runs as
// code, so the cache is private to the user and every entry is verified before use.
//
// Root: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln, else
//       /tmp/kiln-cache-<uid> (never a path shared between users).
// Rules:
//  - Kiln creates every folder of its own (the root and its subfolders) with mode 0700. An existing
//    one that is not a real directory, is owned by another user, or is writable by group or others is
//    refused with one error naming it: nothing is loaded from or written into it.
//  - An entry NAME is stored as NAME plus NAME.sha256 (the SHA-256 of NAME's bytes), both written
//    with write_file_atomically (base/output_file.h: temporary, every write checked, rename); a
//    failed write leaves no entry.
//  - load_verified reads an entry through one descriptor (no symlinks followed), and accepts it
//    only when it is a regular file owned by this user, not writable by others, and its bytes hash
//    to its .sha256. Anything else is a miss (with the reason): the caller recompiles.
//  - Temporaries left by processes that no longer run are removed when a folder is opened.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace kiln {

// The cache root as configured by the environment (not created).
std::string kernel_cache_root();

// <root>/<subfolder>, created 0700 and checked as above; stale temporaries in it removed.
// Throws kiln::Error naming the folder when it cannot be created or is refused.
std::filesystem::path open_kernel_cache(const std::string& subfolder);

// Stores `bytes` as `entry` with its hash. Throws kiln::Error naming the file when a write, flush
// or rename fails; leaves no partial entry behind.
void cache_store(const std::filesystem::path& entry, const std::string& bytes);

// Moves a finished file (a compiler's output) into place as `entry`, recording its hash. Throws
// kiln::Error naming the file when it cannot be read or placed.
void cache_adopt(const std::filesystem::path& finished, const std::filesystem::path& entry);

struct CacheLoad {
  std::optional<std::string> bytes;  // the verified contents; empty optional on a miss
  std::string why_not;               // "" for an absent entry, else why it was refused
  uint64_t device = 0, inode = 0;    // the file that was verified
};
CacheLoad cache_load_verified(const std::filesystem::path& entry);

// dlopen of a verified shared library: the file at `entry` must still be the one `verified` read
// (same device and inode; only this user can write the folder), checked once more after loading.
// Returns the handle; throws kiln::Error naming the file on failure.
void* dlopen_verified(const std::filesystem::path& entry, const CacheLoad& verified);

}  // namespace kiln
