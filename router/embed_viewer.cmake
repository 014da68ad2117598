# Turns every file below the directory DIR (the trace viewer, mgmt/viewer/) into the C source
# OUT: the table rt_http_viewer_assets[] of rt_http.h (name relative to DIR, bytes, length), in
# name order. An absent or empty DIR gives an empty table.
set(FILES "")
if(IS_DIRECTORY "${DIR}")
  file(GLOB_RECURSE FILES LIST_DIRECTORIES false RELATIVE "${DIR}" "${DIR}/*")
  list(SORT FILES)
endif()
set(BODY "")
set(TABLE "")
set(I 0)
foreach(f ${FILES})
  if(f MATCHES "[\"\\\\]" OR f MATCHES "(^|/)\\.")
    message(WARNING "embed_viewer: skipping ${f} (hidden, or a quote or backslash in its name)")
    continue()
  endif()
  file(READ "${DIR}/${f}" HEX HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," BYTES "${HEX}")
  string(APPEND BODY "static const unsigned char asset_${I}[] = {${BYTES} 0x00};\n")
  string(APPEND TABLE "    {\"${f}\", asset_${I}, sizeof(asset_${I}) - 1},\n")
  math(EXPR I "${I} + 1")
endforeach()
if(I EQUAL 0)
  set(TABLE "    {0, 0, 0},\n")
endif()
file(WRITE "${OUT}.tmp" "/* Generated from mgmt/viewer/ by embed_viewer.cmake. Do not edit. */\n"
  "#include \"rt_http.h\"\n\n"
  "${BODY}\n"
  "const rt_http_asset rt_http_viewer_assets[] = {\n${TABLE}};\n"
  "const size_t rt_http_viewer_n_assets = ${I};\n")
# Rewritten only when it changes, so an unchanged viewer rebuilds nothing.
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
