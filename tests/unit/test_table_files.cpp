// Rows to and from files: `output` appends extracted terms, `print-function :file` writes what
// it would print (egglog 14.0.0 writes the same bytes), `input` reads them back.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "dsl/table_files.hpp"
#include "tests/unit/test_program.hpp"

using kiln::testing::TestProgram;

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A fresh directory for one test's files, removed afterwards.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("kiln-table-files-" + name)) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace

TEST_CASE("table files: output appends one extracted term per line", "[dsl]") {
  ScratchDir dir("output");
  std::string file = dir.file("terms.txt");
  TestProgram p;
  p.run("(datatype M (Num i64) (Add M M))\n(output \"" + file +
        "\" (Add (Num 1) (Num 2)) (Num 3))\n(output \"" + file + "\" 7)");
  CHECK(read_file(file) == "(Add (Num 1) (Num 2))\n(Num 3)\n7\n");
}

TEST_CASE("table files: print-function :file writes the block it would print, replacing the file",
          "[dsl]") {
  ScratchDir dir("print");
  std::string file = dir.file("rows.txt");
  TestProgram p;
  p.run("(relation E (i64 i64)) (E 1 2)");
  CHECK(p.print("(print-function E :file \"" + file + "\")").empty());
  CHECK(p.print("(print-function E :file \"" + file + "\")").empty());
  CHECK(read_file(file) == "(\n   (E 1 2) -> (E 1 2)\n)\n");
  p.run("(print-function E :mode csv :file \"" + file + "\")");
  CHECK(read_file(file) == "E,1,2,(E 1 2)\n");
}

TEST_CASE("table files: values written by output read back with input", "[dsl]") {
  ScratchDir dir("roundtrip");
  std::string file = dir.file("numbers.tsv");
  TestProgram p;
  p.run("(output \"" + file + "\" 5 -6)\n(relation R (i64))\n(input R \"" + file + "\")");
  CHECK(p.rows("R") == 2);
}

TEST_CASE("table files: a line with the wrong number of fields names the file and line", "[dsl]") {
  ScratchDir dir("bad");
  std::string file = dir.file("bad.tsv");
  std::ofstream(file) << "1\t2\n3\n";
  TestProgram p;
  std::string message = p.error("(relation E (i64 i64))\n(input E \"" + file + "\")");
  CHECK(message.find("bad.tsv:2: expected 2 tab-separated field(s), found 1") != std::string::npos);
  CHECK(message.find("t.egg:2:10") != std::string::npos);
}

TEST_CASE("table files: CSV fields are quoted only when they must be", "[dsl]") {
  using kiln::dsl::csv_field;
  CHECK(csv_field("(Num 1)") == "(Num 1)");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("\"x\"") == "\"\"\"x\"\"\"");
  CHECK(csv_field("") == "\"\"");
}
