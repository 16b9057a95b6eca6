#include "scan/import_graph.h"

#include <algorithm>
#include <deque>
#include <string_view>
#include <unordered_map>

namespace dt::scan {

namespace {

std::string_view DirOf(std::string_view rel) {
  auto slash = rel.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : rel.substr(0, slash);
}

std::string Join(std::string_view dir, std::string_view path) {
  std::string out(dir);
  if (!dir.empty() && !path.empty()) out += '/';
  out += path;
  return out;
}

std::string ModulePath(const std::string& dotted) {
  std::string out = dotted;
  for (char& c : out)
    if (c == '.') c = '/';
  return out;
}

}  // namespace

std::unordered_set<std::string> ReachableModules(const std::vector<PyModule>& modules,
                                                 const std::vector<std::string>& entries,
                                                 std::unordered_set<std::string>* behind_checks) {
  // "pkg/mod" -> index for pkg/mod.py and pkg/mod/__init__.py. Keys are views into the modules'
  // paths (prefixes of them), which outlive the maps: no string is copied for the ~40k modules of
  // a large tree.
  std::unordered_map<std::string_view, std::size_t> index;
  std::unordered_map<std::string_view, std::size_t> by_rel;
  // Folders holding a module (and their parents): `from X import name` can only name a submodule
  // when X is one of them, which spares the lookups of the (many) imported functions and classes.
  std::unordered_set<std::string_view> dirs;
  index.reserve(modules.size());
  by_rel.reserve(modules.size());
  for (std::size_t i = 0; i < modules.size(); ++i) {
    std::string_view rel = modules[i].rel;
    by_rel.emplace(rel, i);
    std::string_view key = rel.substr(0, rel.rfind('.'));
    constexpr std::string_view init = "/__init__";
    if (key == "__init__")
      key = {};
    else if (key.size() > init.size() && key.substr(key.size() - init.size()) == init)
      key.remove_suffix(init.size());
    index.emplace(key, i);
    for (std::string_view d = DirOf(rel); !d.empty() && dirs.insert(d).second;) d = DirOf(d);
  }
  std::vector<char> seen(modules.size(), 0);
  std::deque<std::size_t> queue;
  // Edges from module to module, each with whether its import is guarded: the second walk below
  // follows only the unguarded ones.
  std::vector<std::vector<std::pair<std::size_t, bool>>> edges(modules.size());
  std::size_t from = 0;
  bool edge_guarded = false;
  bool recording = false;
  std::vector<std::string> sys_path;  // Folders the modules run so far put on sys.path.
  // An import runs the module before the importer's next line: the folders it puts on sys.path
  // (`import _init_paths`, then `from models.model import ...`) count from there on.
  auto visit = [&](std::size_t i) {
    if (recording) edges[from].emplace_back(i, edge_guarded);
    if (!seen[i]) {
      seen[i] = 1;
      queue.push_back(i);
      for (const std::string& p : modules[i].sys_path)
        if (std::find(sys_path.begin(), sys_path.end(), p) == sys_path.end()) sys_path.push_back(p);
    }
  };
  auto try_path = [&](const std::string& path) {
    auto it = index.find(path);
    if (it == index.end()) return false;
    visit(it->second);
    return true;
  };
  std::vector<std::size_t> roots;
  for (const auto& e : entries)
    if (auto it = by_rel.find(e); it != by_rel.end()) {
      roots.push_back(it->second);
      visit(it->second);
    }
  recording = behind_checks != nullptr;
  while (!queue.empty()) {
    from = queue.front();
    const PyModule& m = modules[from];
    queue.pop_front();
    std::string_view dir = DirOf(m.rel);
    for (const auto& imp : m.imports) {
      edge_guarded = imp.guarded;
      std::vector<std::string_view> bases;
      if (imp.level > 0) {
        std::string_view base = dir;
        for (int up = 1; up < imp.level; ++up) base = DirOf(base);
        bases.push_back(base);
      } else {
        bases = {"", dir, "src"};
        for (const std::string& p : sys_path) bases.push_back(p == "." ? std::string_view() : p);
      }
      std::string mod = ModulePath(imp.module);
      for (const auto& base : bases) {
        std::string target = Join(base, mod);
        bool found = !mod.empty() && try_path(target);
        // Parent packages run their __init__ first.
        for (std::string_view p = DirOf(mod); found && !p.empty(); p = DirOf(p))
          try_path(Join(base, p));
        if (target.empty() || dirs.count(std::string_view(target)))
          for (const auto& name : imp.names) found |= try_path(Join(target, name));
        if (found && imp.level == 0) break;
      }
    }
  }
  std::unordered_set<std::string> reachable;
  for (std::size_t i = 0; i < modules.size(); ++i)
    if (seen[i]) reachable.insert(modules[i].rel);
  if (behind_checks != nullptr) {
    std::vector<char> firm(modules.size(), 0);  // Reached through unguarded imports alone.
    std::vector<std::size_t> stack = roots;
    for (std::size_t r : roots) firm[r] = 1;
    while (!stack.empty()) {
      std::size_t i = stack.back();
      stack.pop_back();
      for (const auto& [to, guarded] : edges[i])
        if (!guarded && !firm[to]) {
          firm[to] = 1;
          stack.push_back(to);
        }
    }
    for (std::size_t i = 0; i < modules.size(); ++i)
      if (seen[i] && !firm[i]) behind_checks->insert(modules[i].rel);
  }
  return reachable;
}

}  // namespace dt::scan
