// kiln inspect MODEL.pt --input 8x64 [--input ...] [--dtype float32] [--dot FILE] [--json] [--table]
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "engine/api/kiln.h"

namespace kiln::cli {

namespace {

struct InspectArgs {
  ModelArgs model;
  std::string dot;
  bool json = false;
  bool table = false;
  bool regions = false;
};

std::string with_commas(int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

int run(const InspectArgs& a) {
  auto specs = a.model.specs();
  auto r = api::inspect(a.model.path, specs);
  if (!a.dot.empty()) {
    std::ofstream out(a.dot);
    if (!out) throw Error(a.dot + ": cannot write the DOT file (check the directory exists and is writable)");
    out << ir::to_dot(r.graph);
    if (!out.flush()) throw Error(a.dot + ": writing the DOT file failed (disk full?)");
  }
  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = a.model.path;
    j["libtorch"] = r.libtorch_version;
    nlohmann::ordered_json ins = nlohmann::ordered_json::array();
    for (const auto& s : specs) ins.push_back(s.str());
    j["inputs"] = ins;
    j["parameter_count"] = r.parameter_count;
    j["buffer_count"] = r.buffer_count;
    j["op_histogram"] = r.op_histogram;
    j["printed"] = r.printed;
    if (a.regions) {
      nlohmann::ordered_json breaks = nlohmann::ordered_json::array();
      for (const auto& b : r.breaks)
        breaks.push_back({{"id", b.id}, {"reason", b.reason}, {"line", b.loc.line}, {"file", b.loc.file},
                          {"ends_region", b.ends_region}, {"resumes_region", b.resumes_region}});
      j["regions"] = r.regions;
      j["graph_breaks"] = breaks;
    }
    j["graph"] = nlohmann::ordered_json::parse(ir::to_json(r.graph));
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "model       " << a.model.path << "\n";
  std::cout << "libtorch    " << r.libtorch_version << "\n";
  std::cout << "inputs      ";
  for (size_t i = 0; i < specs.size(); ++i) std::cout << (i ? ", " : "") << specs[i].str();
  std::cout << "\nparameters  " << with_commas(r.parameter_count) << " (buffers " << with_commas(r.buffer_count)
            << ")\n\n";
  std::cout << (a.table ? ir::to_table(r.graph) : ir::to_readable(r.graph)) << "\n";
  std::cout << "op histogram\n";
  size_t w = 0;
  for (const auto& [op, n] : r.op_histogram) w = std::max(w, op.size());
  for (const auto& [op, n] : r.op_histogram) std::cout << "  " << op << std::string(w - op.size() + 2, ' ') << n << "\n";
  if (a.regions) {
    std::cout << "\ncapture regions (" << r.breaks.size() << " graph break" << (r.breaks.size() == 1 ? "" : "s")
              << ")\n";
    std::istringstream lines(r.regions);
    for (std::string l; std::getline(lines, l);) std::cout << "  " << l << "\n";
  }
  if (!r.printed.empty()) {
    std::cout << "\nprinted by the model during the run\n";
    for (const auto& l : r.printed) std::cout << "  " << l << "\n";
  }
  if (!a.dot.empty()) std::cout << "\nDOT written to " << a.dot << "\n";
  return 0;
}

}  // namespace

Command add_inspect(CLI::App& app) {
  auto [cmd, args, command] = subcommand<InspectArgs>(app, "inspect", kInspectDescription);
  add_model_options(cmd, args.model);
  cmd.add_option("--dot", args.dot, "Also write the graph as Graphviz DOT to FILE");
  add_json_flag(cmd, args.json);
  cmd.add_flag("--regions", args.regions, "Also show how capture cuts the graph into regions and graph breaks");
  cmd.add_flag("--table", args.table, "Print the graph as a table (opcode, name, target, args, meta, module, source)");
  return command(run);
}

}  // namespace kiln::cli
