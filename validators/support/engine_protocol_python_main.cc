// trainlock-engine-protocol-py: writes the Python engines' protocol module
// (engine_protocol_python.h) to the file named by its one argument, or to stdout without one.
#include <fstream>
#include <iostream>

#include "support/engine_protocol_python.h"

int main(int argc, char** argv) {
  const std::string text = trainlock::validate::EngineProtocolPythonModule();
  if (argc < 2) {
    std::cout << text;
    return 0;
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) {
    std::cerr << "trainlock-engine-protocol-py: " << argv[1] << ": cannot be written\n";
    return 3;
  }
  return 0;
}
