# Turns the JSON file IN into a C source OUT defining `const char rt_config_default_json[]`.
file(READ ${IN} HEX HEX)
string(LENGTH "${HEX}" N)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," BYTES "${HEX}")
file(WRITE ${OUT} "/* Generated from configs/default.json by embed_config.cmake. Do not edit. */\n"
  "#include <stddef.h>\n"
  "extern const char rt_config_default_json[];\n"
  "extern const size_t rt_config_default_json_len;\n"
  "const char rt_config_default_json[] = {${BYTES} 0x00};\n"
  "const size_t rt_config_default_json_len = sizeof(rt_config_default_json) - 1;\n")
