# Generates a .cpp that holds every migrations/<driver>/NNNN_name.sql as a string, in order.
# Run as a script: cmake -DSRC_DIR=... -DOUT=... -DHEADER=... [-DFUNC=name] -P embed_migrations.cmake
# FUNC names the function that returns them (default embedded_migrations); HEADER, the driver's
# header that declares it.
if(NOT DEFINED FUNC)
  set(FUNC embedded_migrations)
endif()
file(GLOB files "${SRC_DIR}/[0-9][0-9][0-9][0-9]_*.sql")
list(SORT files)
set(body "")
foreach(f IN LISTS files)
  get_filename_component(name "${f}" NAME_WE)
  string(SUBSTRING "${name}" 0 4 version)
  math(EXPR version "${version}")
  file(READ "${f}" sql)
  # A raw string literal with a delimiter no migration contains.
  string(APPEND body "    {${version}, \"${name}\", R\"autonous_sql(${sql})autonous_sql\"},\n")
endforeach()
file(WRITE "${OUT}.tmp"
"// Generated from ${SRC_DIR}/*.sql by cmake/embed_migrations.cmake. Do not edit.
#include \"${HEADER}\"

namespace autonous::db {

const std::vector<Migration>& ${FUNC}() {
  static const std::vector<Migration> kMigrations = {
${body}  };
  return kMigrations;
}

}  // namespace autonous::db
")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
