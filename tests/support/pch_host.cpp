// The source of kiln_test_pch (tests/CMakeLists.txt), the target that builds the test executables'
// precompiled header. It defines nothing: the header is what the target is for.
