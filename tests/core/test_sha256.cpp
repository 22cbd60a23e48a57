// core/sha256.cpp: FIPS 180-4's test vectors (empty, "abc", the two-block message, a million 'a'), a
// file's digest equal to its bytes' digest, an unreadable file refused.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "core/errors.hpp"
#include "core/sha256.hpp"

using attnprof::core::sha256_file;
using attnprof::core::sha256_hex;

TEST_CASE("sha256_hex: the standard's test vectors") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55 and 56 bytes: the padding fits in one block, then needs a second.
  CHECK(sha256_hex(std::string(55, 'a')) != sha256_hex(std::string(56, 'a')));
  CHECK(sha256_hex(std::string(64, 'a')) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST_CASE("sha256_file: a file's digest is its bytes'; an unreadable file is an InputError") {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("attnprof-sha256-" + std::to_string(::getpid()) + ".bin");
  const std::string bytes = std::string("plugin\0bytes\xff", 13);
  std::ofstream(path, std::ios::binary) << bytes;
  CHECK(sha256_file(path.string()) == sha256_hex(bytes));
  std::filesystem::remove(path);
  CHECK_THROWS_AS(sha256_file(path.string()), attnprof::InputError);
}
