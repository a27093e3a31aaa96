# Generates a .cpp whose function returns a text file's content, so the binary carries the file.
# Run as a script: cmake -DIN=<file> -DOUT=<cpp> -DFUNC=<qualified name> -DHEADER=<header> -P embed_text.cmake
file(READ "${IN}" text)
string(FIND "${text}" ")autonous_text\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} holds the raw string's delimiter")
endif()
file(WRITE "${OUT}.tmp"
"// Generated from ${IN} by cmake/embed_text.cmake. Do not edit.
#include \"${HEADER}\"

std::string_view ${FUNC}() {
  static constexpr std::string_view kText = R\"autonous_text(${text})autonous_text\";
  return kText;
}
")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
