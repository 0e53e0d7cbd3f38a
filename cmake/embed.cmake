# cmake -DIN=<file> -DOUT=<file.cc> -DNAME=<symbol> -P embed.cmake: the bytes of IN as a C++ array
# (`extern const unsigned char NAME[];` in cgdr::mem; a fat binary carries its own size).
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE "${OUT}" "// Generated from ${IN} by cmake/embed.cmake; do not edit.\n#include <cstddef>\nnamespace cgdr::mem {\nalignas(64) extern const unsigned char ${NAME}[] = {\n${body}\n};\n}  // namespace cgdr::mem\n")
