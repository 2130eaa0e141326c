{
  "target_defaults": {
    "cflags_cc!": ["-fno-exceptions"],
    "cflags_cc": ["-std=c++17", "-O2", "-fexceptions"],
    "cflags!": ["-fno-exceptions"],
    "libraries": ["-lbz2", "-llzma", "-ldivsufsort", "-pthread"],
    "ldflags": ["-pthread"]
  },
  "targets": [
    {
      "target_name": "delta_engine",
      "sources": ["src/addon.cpp", "src/apply.cpp", "src/diff.cpp", "src/packed-stream.cpp", "src/lzma-source.cpp", "src/io.cpp"]
    },
    {
      "target_name": "updater-delta",
      "type": "executable",
      "sources": ["src/cli.cpp", "src/apply.cpp", "src/diff.cpp", "src/packed-stream.cpp", "src/lzma-source.cpp", "src/io.cpp"]
    }
  ]
}
