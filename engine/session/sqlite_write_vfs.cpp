// The gathering VFS (sqlite_write_vfs.h): a shim over the system's default VFS. Files other than a
// main database are the default VFS's own files, opened in the memory SQLite gives this VFS's.
#include "engine/session/sqlite_write_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

namespace kiln::session {

namespace {

// A private file-control opcode: "flush what you hold" (SQLite's own opcodes are small numbers).
constexpr int kFlushOp = 0x4b494c4e;

struct GatheringFile {
  sqlite3_file base;    // pMethods: kMethods
  sqlite3_file* real;   // the default VFS's file, in the memory after this struct
  char* buf;            // kGatherBytes, owned
  sqlite3_int64 start;  // file offset of buf[0]
  size_t used;          // bytes held in buf
};

sqlite3_vfs* g_real = nullptr;

GatheringFile* of(sqlite3_file* f) { return reinterpret_cast<GatheringFile*>(f); }

int flush(GatheringFile* g) {
  if (g->used == 0) return SQLITE_OK;
  const int rc = g->real->pMethods->xWrite(g->real, g->buf, static_cast<int>(g->used), g->start);
  g->used = 0;  // written or failed: a failed write is reported once, not retried on close
  return rc;
}

bool overlaps(const GatheringFile* g, sqlite3_int64 off, sqlite3_int64 n) {
  return g->used > 0 && off < g->start + static_cast<sqlite3_int64>(g->used) && g->start < off + n;
}

int x_close(sqlite3_file* f) {
  GatheringFile* g = of(f);
  int rc = flush(g);
  const int closed = g->real->pMethods ? g->real->pMethods->xClose(g->real) : SQLITE_OK;
  delete[] g->buf;
  g->buf = nullptr;
  return rc != SQLITE_OK ? rc : closed;
}

int x_read(sqlite3_file* f, void* out, int n, sqlite3_int64 off) {
  GatheringFile* g = of(f);
  if (overlaps(g, off, n)) {
    int rc = flush(g);
    if (rc != SQLITE_OK) return rc;
  }
  return g->real->pMethods->xRead(g->real, out, n, off);
}

int x_write(sqlite3_file* f, const void* in, int n, sqlite3_int64 off) {
  GatheringFile* g = of(f);
  const auto size = static_cast<size_t>(n);
  const sqlite3_int64 end = g->start + static_cast<sqlite3_int64>(g->used);
  if (g->used > 0 && off >= g->start && off + n <= end) {  // rewrites bytes held: changed in place
    std::memcpy(g->buf + (off - g->start), in, size);
    return SQLITE_OK;
  }
  const bool continues = g->used > 0 && off == end;
  if (!continues || g->used + size > kGatherBytes) {
    int rc = flush(g);
    if (rc != SQLITE_OK) return rc;
  }
  if (size > kGatherBytes) return g->real->pMethods->xWrite(g->real, in, n, off);
  if (g->used == 0) g->start = off;
  std::memcpy(g->buf + g->used, in, size);
  g->used += size;
  return SQLITE_OK;
}

int x_truncate(sqlite3_file* f, sqlite3_int64 size) {
  GatheringFile* g = of(f);
  int rc = flush(g);
  return rc != SQLITE_OK ? rc : g->real->pMethods->xTruncate(g->real, size);
}

int x_sync(sqlite3_file* f, int flags) {
  GatheringFile* g = of(f);
  int rc = flush(g);
  return rc != SQLITE_OK ? rc : g->real->pMethods->xSync(g->real, flags);
}

int x_file_size(sqlite3_file* f, sqlite3_int64* size) {
  GatheringFile* g = of(f);
  int rc = g->real->pMethods->xFileSize(g->real, size);
  if (rc == SQLITE_OK && g->used > 0) *size = std::max(*size, g->start + static_cast<sqlite3_int64>(g->used));
  return rc;
}

int x_lock(sqlite3_file* f, int level) { return of(f)->real->pMethods->xLock(of(f)->real, level); }
int x_unlock(sqlite3_file* f, int level) { return of(f)->real->pMethods->xUnlock(of(f)->real, level); }
int x_check_reserved(sqlite3_file* f, int* out) {
  return of(f)->real->pMethods->xCheckReservedLock(of(f)->real, out);
}

int x_file_control(sqlite3_file* f, int op, void* arg) {
  GatheringFile* g = of(f);
  if (op == kFlushOp) return flush(g);
  return g->real->pMethods->xFileControl(g->real, op, arg);
}

int x_sector_size(sqlite3_file* f) { return of(f)->real->pMethods->xSectorSize(of(f)->real); }
int x_device(sqlite3_file* f) { return of(f)->real->pMethods->xDeviceCharacteristics(of(f)->real); }

// The shared-memory calls (write-ahead log) go to the real file.
int x_shm_map(sqlite3_file* f, int region, int size, int extend, void volatile** p) {
  return of(f)->real->pMethods->xShmMap(of(f)->real, region, size, extend, p);
}
int x_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
  return of(f)->real->pMethods->xShmLock(of(f)->real, offset, n, flags);
}
void x_shm_barrier(sqlite3_file* f) { of(f)->real->pMethods->xShmBarrier(of(f)->real); }
int x_shm_unmap(sqlite3_file* f, int remove) { return of(f)->real->pMethods->xShmUnmap(of(f)->real, remove); }

// Version 2: no memory-mapped pages (xFetch), which would read around the gathered bytes.
const sqlite3_io_methods kMethods = {
    2,           x_close,        x_read,       x_write,       x_truncate,     x_sync,
    x_file_size, x_lock,         x_unlock,     x_check_reserved, x_file_control, x_sector_size,
    x_device,    x_shm_map,      x_shm_lock,   x_shm_barrier, x_shm_unmap,    nullptr,
    nullptr,
};

int x_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  if (!(flags & SQLITE_OPEN_MAIN_DB)) return g_real->xOpen(g_real, name, f, flags, out_flags);
  GatheringFile* g = of(f);
  g->base.pMethods = nullptr;
  g->real = reinterpret_cast<sqlite3_file*>(g + 1);
  g->used = 0;
  g->start = 0;
  g->buf = new (std::nothrow) char[kGatherBytes];
  if (!g->buf) return SQLITE_NOMEM;
  int rc = g_real->xOpen(g_real, name, g->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    delete[] g->buf;
    g->buf = nullptr;
    return rc;  // base.pMethods stays null: SQLite does not close a file that did not open
  }
  g->base.pMethods = &kMethods;
  return SQLITE_OK;
}

// Everything else is the default VFS's.
int x_delete(sqlite3_vfs*, const char* name, int sync_dir) { return g_real->xDelete(g_real, name, sync_dir); }
int x_access(sqlite3_vfs*, const char* name, int flags, int* out) { return g_real->xAccess(g_real, name, flags, out); }
int x_full_pathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return g_real->xFullPathname(g_real, name, n, out);
}
void* x_dl_open(sqlite3_vfs*, const char* name) { return g_real->xDlOpen(g_real, name); }
void x_dl_error(sqlite3_vfs*, int n, char* out) { g_real->xDlError(g_real, n, out); }
void (*x_dl_sym(sqlite3_vfs*, void* h, const char* sym))(void) { return g_real->xDlSym(g_real, h, sym); }
void x_dl_close(sqlite3_vfs*, void* h) { g_real->xDlClose(g_real, h); }
int x_randomness(sqlite3_vfs*, int n, char* out) { return g_real->xRandomness(g_real, n, out); }
int x_sleep(sqlite3_vfs*, int us) { return g_real->xSleep(g_real, us); }
int x_current_time(sqlite3_vfs*, double* out) { return g_real->xCurrentTime(g_real, out); }
int x_last_error(sqlite3_vfs*, int n, char* out) {
  return g_real->xGetLastError ? g_real->xGetLastError(g_real, n, out) : 0;
}
int x_current_time64(sqlite3_vfs*, sqlite3_int64* out) {
  if (g_real->iVersion >= 2 && g_real->xCurrentTimeInt64) return g_real->xCurrentTimeInt64(g_real, out);
  double days = 0;
  int rc = g_real->xCurrentTime(g_real, &days);
  *out = static_cast<sqlite3_int64>(days * 86400000.0);
  return rc;
}

sqlite3_vfs g_vfs;

}  // namespace

const char* gathering_vfs_name() {
  static std::once_flag once;
  std::call_once(once, [] {
    sqlite3_initialize();
    g_real = sqlite3_vfs_find(nullptr);
    if (!g_real) return;
    g_vfs.iVersion = 2;
    g_vfs.szOsFile = static_cast<int>(sizeof(GatheringFile)) + g_real->szOsFile;
    g_vfs.mxPathname = g_real->mxPathname;
    g_vfs.zName = "kiln-gathering";
    g_vfs.xOpen = x_open;
    g_vfs.xDelete = x_delete;
    g_vfs.xAccess = x_access;
    g_vfs.xFullPathname = x_full_pathname;
    g_vfs.xDlOpen = x_dl_open;
    g_vfs.xDlError = x_dl_error;
    g_vfs.xDlSym = x_dl_sym;
    g_vfs.xDlClose = x_dl_close;
    g_vfs.xRandomness = x_randomness;
    g_vfs.xSleep = x_sleep;
    g_vfs.xCurrentTime = x_current_time;
    g_vfs.xGetLastError = x_last_error;
    g_vfs.xCurrentTimeInt64 = x_current_time64;
    if (sqlite3_vfs_register(&g_vfs, 0) != SQLITE_OK) g_real = nullptr;
  });
  return g_real ? g_vfs.zName : nullptr;  // nullptr: SQLite's default VFS
}

int flush_gathered_writes(sqlite3* db) {
  sqlite3_vfs* vfs = nullptr;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_VFS_POINTER, &vfs) != SQLITE_OK || vfs != &g_vfs) return SQLITE_OK;
  return sqlite3_file_control(db, "main", kFlushOp, nullptr);
}

}  // namespace kiln::session
