#include "scan/import_graph.h"

#include <deque>
#include <unordered_map>

namespace dt::scan {

namespace {

std::string DirOf(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

std::string Join(const std::string& dir, const std::string& path) {
  if (dir.empty()) return path;
  if (path.empty()) return dir;
  return dir + "/" + path;
}

std::string ModulePath(const std::string& dotted) {
  std::string out = dotted;
  for (char& c : out)
    if (c == '.') c = '/';
  return out;
}

}  // namespace

std::unordered_set<std::string> ReachableModules(std::vector<PyModule>& modules,
                                                 const std::vector<std::string>& entries,
                                                 const ImportLoader& load) {
  // "pkg/mod" -> index for pkg/mod.py and pkg/mod/__init__.py.
  std::unordered_map<std::string, std::size_t> index;
  std::unordered_map<std::string, std::size_t> by_rel;
  // Folders holding a module (and their parents): `from X import name` can only name a submodule
  // when X is one of them, which spares the lookups of the (many) imported functions and classes.
  std::unordered_set<std::string> dirs;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    const std::string& rel = modules[i].rel;
    by_rel[rel] = i;
    std::string key = rel.substr(0, rel.rfind('.'));
    const std::string init = "/__init__";
    if (key == "__init__") key.clear();
    else if (key.size() > init.size() && key.compare(key.size() - init.size(), init.size(), init) == 0)
      key.resize(key.size() - init.size());
    index.emplace(key, i);
    for (std::string d = DirOf(rel); !d.empty() && dirs.insert(d).second;) d = DirOf(d);
  }
  std::unordered_set<std::string> seen;
  std::deque<std::size_t> queue;
  auto visit = [&](std::size_t i) {
    if (seen.insert(modules[i].rel).second) queue.push_back(i);
  };
  auto try_path = [&](const std::string& path) {
    auto it = index.find(path);
    if (it == index.end()) return false;
    visit(it->second);
    return true;
  };
  for (const auto& e : entries)
    if (auto it = by_rel.find(e); it != by_rel.end()) visit(it->second);
  std::vector<PyModule*> pending;
  for (std::size_t level_left = 0; !queue.empty(); --level_left) {
    if (level_left == 0) {  // A new breadth-first level: load its deferred imports together.
      level_left = queue.size();
      pending.clear();
      for (std::size_t i : queue)
        if (modules[i].imports_pending) pending.push_back(&modules[i]);
      if (!pending.empty() && load) load(pending);
      for (PyModule* p : pending) p->imports_pending = false;
    }
    const PyModule& m = modules[queue.front()];
    queue.pop_front();
    std::string dir = DirOf(m.rel);
    for (const auto& imp : m.imports) {
      std::vector<std::string> bases;
      if (imp.level > 0) {
        std::string base = dir;
        for (int up = 1; up < imp.level; ++up) base = DirOf(base);
        bases.push_back(base);
      } else {
        bases = {"", dir, "src"};
      }
      std::string mod = ModulePath(imp.module);
      for (const auto& base : bases) {
        std::string target = Join(base, mod);
        bool found = !mod.empty() && try_path(target);
        // Parent packages run their __init__ first.
        for (std::string p = DirOf(mod); found && !p.empty(); p = DirOf(p)) try_path(Join(base, p));
        if (target.empty() || dirs.count(target))
          for (const auto& name : imp.names) found |= try_path(Join(target, name));
        if (found && imp.level == 0) break;
      }
    }
  }
  return seen;
}

}  // namespace dt::scan
