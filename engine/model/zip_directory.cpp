// libzip behind plain values; see zip_directory.h.
#include "engine/model/zip_directory.h"

#include <zip.h>

#include <algorithm>
#include <memory>

namespace kiln::model {

namespace {

struct ArchiveCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using Archive = std::unique_ptr<zip_t, ArchiveCloser>;

std::optional<std::vector<std::string>> names_of(zip_t* z) {
  zip_int64_t n = zip_get_num_entries(z, 0);
  if (n < 0) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(n));
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(z, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
    if (!name) return std::nullopt;
    out.emplace_back(name);
  }
  return out;
}

Archive open_path(const std::string& path, std::string* why) {
  int error = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (!z && why) {
    if (error == ZIP_ER_NOZIP) {
      *why = "truncated or corrupt zip archive (its central directory is missing)";
    } else {
      zip_error_t e;
      zip_error_init_with_code(&e, error);
      *why = std::string("corrupt zip archive (") + zip_error_strerror(&e) + ")";
      zip_error_fini(&e);
    }
  }
  return Archive(z);
}

std::string corrupt(const std::string& detail) { return "corrupt zip archive (" + detail + ")"; }

}  // namespace

std::optional<std::vector<std::string>> zip_entry_names(const std::string& path) {
  Archive z = open_path(path, nullptr);
  if (!z) return std::nullopt;
  return names_of(z.get());
}

std::optional<std::vector<std::string>> zip_entry_names_of(const std::string& bytes) {
  if (bytes.size() < 22) return std::nullopt;  // shorter than an end-of-directory record: libzip calls it a new archive
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!src) {
    zip_error_fini(&error);
    return std::nullopt;
  }
  zip_t* z = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  zip_error_fini(&error);
  if (!z) {
    zip_source_free(src);
    return std::nullopt;
  }
  Archive archive(z);
  return names_of(z);
}

std::string verify_zip_archive(const std::string& path) {
  std::string why;
  Archive z = open_path(path, &why);
  if (!z) return why;
  zip_int64_t n = zip_get_num_entries(z.get(), 0);
  uint64_t total = 0;
  std::vector<char> buf(1 << 20);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z.get(), static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW, &st) != 0)
      return corrupt("entry " + std::to_string(i) + " cannot be read: " + zip_strerror(z.get()));
    std::string name = (st.valid & ZIP_STAT_NAME) && st.name ? st.name : "#" + std::to_string(i);
    uint64_t size = (st.valid & ZIP_STAT_SIZE) ? st.size : 0;
    uint64_t packed = (st.valid & ZIP_STAT_COMP_SIZE) ? st.comp_size : 0;
    if (size > std::max<uint64_t>(1 << 20, kMaxExpansion * packed))
      return corrupt("entry '" + name + "' declares " + std::to_string(size) + " bytes from " + std::to_string(packed) +
                     " stored bytes, more than " + std::to_string(kMaxExpansion) + "x: refusing it");
    total += size;
    if (total > kMaxArchiveBytes)
      return corrupt("its entries declare more than " + std::to_string(kMaxArchiveBytes >> 30) + " GiB in all: refusing it");
    zip_file_t* f = zip_fopen_index(z.get(), static_cast<zip_uint64_t>(i), 0);
    if (!f) return corrupt("entry '" + name + "' cannot be opened: " + zip_strerror(z.get()));
    uint64_t got = 0;
    for (;;) {
      zip_int64_t r = zip_fread(f, buf.data(), buf.size());
      if (r < 0) {
        int code = zip_error_code_zip(zip_file_get_error(f));
        std::string what = code == ZIP_ER_CRC ? "fails its CRC-32 check: the data was changed or damaged"
                                              : std::string("cannot be read: ") + zip_file_strerror(f);
        zip_fclose(f);
        return corrupt("entry '" + name + "' " + what);
      }
      if (r == 0) break;
      got += static_cast<uint64_t>(r);
      if (got > size) {
        zip_fclose(f);
        return corrupt("entry '" + name + "' holds more than the " + std::to_string(size) + " bytes it declares");
      }
    }
    zip_fclose(f);
    if (got != size)
      return corrupt("entry '" + name + "' holds " + std::to_string(got) + " of the " + std::to_string(size) +
                     " bytes it declares");
  }
  return "";
}

}  // namespace kiln::model
