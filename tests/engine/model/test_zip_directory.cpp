// The model loader's own zip reading (engine/model/zip_directory): real archives, truncation, and
// directories that point past the end of the file.
#include "engine/model/zip_directory.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/support/paths.h"

using kiln::model::zip_entry_names;
using kiln::model::zip_entry_names_of;

TEST(ZipDirectory, ListsTheRecordsOfARealArchive) {
  auto path = kiln::test::example("small_mlp.pt");
  auto names = zip_entry_names(path);
  ASSERT_TRUE(names.has_value());
  EXPECT_TRUE(std::any_of(names->begin(), names->end(), [](const std::string& n) {
    return n.size() > 8 && n.compare(n.size() - 8, 8, "/version") == 0;
  }));
  auto in_memory = zip_entry_names_of(kiln::test::read_file(path));
  ASSERT_TRUE(in_memory.has_value());
  EXPECT_EQ(*in_memory, *names);
}

TEST(ZipDirectory, DamagedOrForeignBytesGiveNothing) {
  std::string bytes = kiln::test::read_file(kiln::test::example("small_mlp.pt"));
  ASSERT_GT(bytes.size(), 100u);
  EXPECT_FALSE(zip_entry_names_of(bytes.substr(0, bytes.size() / 2)).has_value());  // no end record
  EXPECT_FALSE(zip_entry_names_of("").has_value());
  EXPECT_FALSE(zip_entry_names_of("PK\x05\x06").has_value());
  // An end record whose directory lies past the end of the data.
  std::string eocd(22, '\0');
  eocd[0] = 'P', eocd[1] = 'K', eocd[2] = 5, eocd[3] = 6;
  eocd[10] = 1;                                       // one entry
  eocd[12] = 46;                                      // directory of 46 bytes
  eocd[16] = static_cast<char>(0xf0), eocd[17] = 1;   // at offset 496, past the end
  EXPECT_FALSE(zip_entry_names_of(eocd).has_value());
  // A directory entry whose name runs past the directory.
  std::string cd(46, '\0');
  cd[0] = 'P', cd[1] = 'K', cd[2] = 1, cd[3] = 2;
  cd[28] = 100;  // name length 100 in a 46-byte directory
  eocd[16] = 0, eocd[17] = 0;  // directory at offset 0
  EXPECT_FALSE(zip_entry_names_of(cd + eocd).has_value());
  EXPECT_FALSE(zip_entry_names(kiln::test::data("models/missing-file.pt")).has_value());
}
