// An SQLite VFS for writing new session files: the system's own (every call passed on), except that
// the main database file gathers consecutive page writes and hands them to the system in writes of
// up to kGatherBytes. SQLite writes one 4 KiB page per write(2); a session of a few hundred MB is
// then tens of thousands of calls, each paying the file system's per-call work (measured on ext4:
// 280 MB in 4 KiB writes 0.27 s of system time, in 64 KiB writes 0.08 s, in 1 MiB 0.07 s). 64 KiB:
// the default VFS writes at most 128 KiB - 1 bytes per call (it cuts the length to 17 bits).
//
// Gathered bytes are written before anything reads or syncs the file, asks its size (answered with
// them counted), truncates it or closes it, and when the next write does not continue them; a write
// into the gathered range changes them in place.
//
// gathering_vfs_name(): the VFS's name, registered with SQLite on the first call (never the default).
// flush_gathered_writes(db): writes what the main database file of `db` holds back.
//   returns: SQLITE_OK, or the error code of the failed write (SQLITE_FULL for a full disk).
//   A write that fails while SQLite itself reads, syncs or truncates is that call's error; one that
//   fails on close is lost with the close: callers that must know flush first.
#pragma once

#include <cstddef>

struct sqlite3;

namespace kiln::session {

constexpr size_t kGatherBytes = size_t(64) << 10;

const char* gathering_vfs_name();
int flush_gathered_writes(sqlite3* db);

}  // namespace kiln::session
