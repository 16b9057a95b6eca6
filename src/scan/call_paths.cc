#include "scan/call_paths.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace dt::scan {

namespace {

constexpr int kRoot = -1;  // What runs when the entries run: module level, classes, entry code.
constexpr int kDead = -2;  // Another script's __main__ block.

struct Edge {
  int from;
  int to;
  bool guarded;
};

// Whether an import of `prefix` may mean module `m`: its name, the package that re-exports it
// (`from pkg import f` for pkg/mod.py), or the same module under a longer root
// (`yolov5.utils.torch_utils` for utils/torch_utils.py).
bool MayMean(const CallModule& m, std::string_view prefix) {
  for (const std::string& n : m.names) {
    if (n == prefix) return true;
    if (n.size() > prefix.size() && n.starts_with(prefix) && n[prefix.size()] == '.') return true;
    if (prefix.size() > n.size() && prefix.ends_with(n) &&
        prefix[prefix.size() - n.size() - 1] == '.')
      return true;
  }
  return false;
}

// Methods that PyTorch, Lightning and Python itself call by name: `forward` through
// `module(x)`, `training_step` and the `on_*` hooks, the dunders.
bool IsCalledByFrameworks(std::string_view name) {
  return name.starts_with("__") || name.starts_with("on_") || name.starts_with("configure_") ||
         name.ends_with("_step") || name == "forward" || name == "step" || name == "run" ||
         name == "setup" || name == "call";
}

}  // namespace

namespace {

// Every definition gets an id; by_name finds them all for a name, local[m] by name in module m.
struct DefIndex {
  std::vector<std::pair<std::size_t, std::size_t>> defs;  // id -> (module, index)
  std::vector<std::unordered_map<std::string_view, int>> local;
  std::unordered_map<std::string_view, std::vector<int>> by_name;
  std::vector<char> root;  // Registered (a decorator, a framework hook) or in an entry module.
};

DefIndex IndexDefs(const std::vector<CallModule>& modules) {
  DefIndex x;
  x.local.resize(modules.size());
  for (std::size_t m = 0; m < modules.size(); ++m) {
    for (std::size_t d = 0; d < modules[m].defs.size(); ++d) {
      const int id = static_cast<int>(x.defs.size());
      const PyTopDef& def = modules[m].defs[d];
      x.defs.emplace_back(m, d);
      x.local[m].emplace(def.name, id);  // A redefinition: the first stands for both.
      x.by_name[def.name].push_back(id);
      x.root.push_back(static_cast<char>(def.registered || modules[m].entry));
    }
  }
  return x;
}

// The calls between definitions (and from module level, kRoot), each marked guarded when it sits
// behind a check; a name resolves to every definition it may mean.
std::vector<Edge> CallEdges(const std::vector<CallModule>& modules, const DefIndex& x) {
  std::vector<Edge> edges;
  for (std::size_t m = 0; m < modules.size(); ++m) {
    for (const PyRef& r : modules[m].refs) {
      int from = kRoot;
      if (r.in_main && !modules[m].entry)
        from = kDead;
      else if (!r.in_def.empty()) {
        auto it = x.local[m].find(r.in_def);
        if (it != x.local[m].end()) from = it->second;
      }
      if (from == kDead) continue;
      auto add = [&](int to) {
        if (to != from) edges.push_back(Edge{from, to, r.guarded});
      };
      if (r.own) {
        if (auto it = x.local[m].find(r.target); it != x.local[m].end()) add(it->second);
        continue;
      }
      const auto dot = r.target.rfind('.');
      const std::string_view name = r.text || dot == std::string::npos
                                        ? std::string_view(r.target)
                                        : std::string_view(r.target).substr(dot + 1);
      auto it = x.by_name.find(name);
      if (it == x.by_name.end()) continue;
      for (int id : it->second) {
        // A name in text may mean any definition; `mod.f` only those in a module it may name.
        if (r.text || (dot != std::string::npos &&
                       MayMean(modules[x.defs[static_cast<std::size_t>(id)].first],
                               std::string_view(r.target).substr(0, dot))))
          add(id);
      }
    }
  }
  return edges;
}

// Reached: from the roots along the edges. Every method counts as reached: an object's method
// may be called from anywhere the object goes (unlike a function, named only through imports).
// `open` marks the methods called from where no edge shows.
std::vector<char> Reach(const std::vector<CallModule>& modules, const DefIndex& x,
                        const std::vector<Edge>& edges, std::vector<char>& open) {
  std::unordered_set<std::string_view> attrs;  // Attributes used anywhere: methods they may call.
  for (const CallModule& m : modules) attrs.insert(m.attrs.begin(), m.attrs.end());
  const std::size_t n = x.defs.size();
  std::vector<std::vector<const Edge*>> out(n);
  std::vector<char> reached(x.root);
  std::vector<int> queue;
  std::vector<int> incoming(n, 0);
  for (const Edge& e : edges) ++incoming[static_cast<std::size_t>(e.to)];
  for (std::size_t id = 0; id < n; ++id) {
    const PyTopDef& def = modules[x.defs[id].first].defs[x.defs[id].second];
    if (!def.method) continue;
    if (!reached[id]) queue.push_back(static_cast<int>(id));
    reached[id] = 1;
    const std::string_view name = std::string_view(def.name).substr(def.name.rfind('.') + 1);
    open[id] = static_cast<char>(x.root[id] || incoming[id] == 0 || attrs.count(name) > 0 ||
                                 IsCalledByFrameworks(name));
  }
  for (std::size_t id = 0; id < n; ++id)
    if (x.root[id]) queue.push_back(static_cast<int>(id));
  for (const Edge& e : edges) {
    if (e.from == kRoot) {
      if (!reached[static_cast<std::size_t>(e.to)]) {
        reached[static_cast<std::size_t>(e.to)] = 1;
        queue.push_back(e.to);
      }
    } else {
      out[static_cast<std::size_t>(e.from)].push_back(&e);
    }
  }
  while (!queue.empty()) {
    const int id = queue.back();
    queue.pop_back();
    for (const Edge* e : out[static_cast<std::size_t>(id)])
      if (!reached[static_cast<std::size_t>(e->to)]) {
        reached[static_cast<std::size_t>(e->to)] = 1;
        queue.push_back(e->to);
      }
  }
  return reached;
}

// A module-level class of the project: its methods, and the mentions of its name (a call builds
// an object, a base or an annotation hands the class on), each with where it sits.
struct ClassUse {
  std::vector<int> methods;
  std::vector<Edge> mentions;  // `to` unused.
  bool registered = false;     // Built from where no mention shows (a registry decorator).
};

// The classes whose methods are defs, and every mention of each class's name.
std::vector<ClassUse> ClassUses(const std::vector<CallModule>& modules, const DefIndex& x) {
  std::vector<ClassUse> classes;
  std::map<std::pair<std::size_t, std::string_view>, std::size_t> index;  // (module, class)
  std::unordered_map<std::string_view, std::vector<std::size_t>> by_name;
  for (std::size_t id = 0; id < x.defs.size(); ++id) {
    const auto [m, d] = x.defs[id];
    const PyTopDef& def = modules[m].defs[d];
    if (!def.method) continue;
    const std::string_view cls = std::string_view(def.name).substr(0, def.name.rfind('.'));
    auto [it, fresh] = index.emplace(std::make_pair(m, cls), classes.size());
    if (fresh) {
      classes.emplace_back();
      by_name[cls].push_back(it->second);
    }
    classes[it->second].methods.push_back(static_cast<int>(id));
    classes[it->second].registered |= def.class_registered;
  }
  if (classes.empty()) return classes;
  for (std::size_t m = 0; m < modules.size(); ++m) {
    for (const PyRef& r : modules[m].refs) {
      int from = kRoot;
      if (r.in_main && !modules[m].entry) continue;
      if (!r.in_def.empty()) {
        auto it = x.local[m].find(r.in_def);
        if (it != x.local[m].end()) from = it->second;
      }
      // `Cls(...)`, `mod.Cls(...)`, `mod.Cls.build(...)`: the class named by the last or the
      // next-to-last part of the target.
      const std::string_view t = r.target;
      // `self.m()` inside the class names a method ("Class.m"), not the class; another class's
      // `Other.apply(...)` (an autograd Function's) is a use of Other.
      if (r.own && t.find('.') != std::string_view::npos) {
        const std::string_view in = r.in_def;
        if (!r.in_class || in.substr(0, in.find('.')) == t.substr(0, t.find('.'))) continue;
      }
      for (int part = 0; part < 2; ++part) {
        std::string_view head = t;
        for (int drop = 0; drop < part && !head.empty(); ++drop) {
          const auto dot = head.rfind('.');
          head = dot == std::string_view::npos ? std::string_view() : head.substr(0, dot);
        }
        if (head.empty()) break;
        const auto dot = head.rfind('.');
        const std::string_view name = dot == std::string_view::npos ? head : head.substr(dot + 1);
        auto it = by_name.find(name);
        if (it == by_name.end()) continue;
        for (std::size_t c : it->second) {
          const std::size_t cm = x.defs[static_cast<std::size_t>(classes[c].methods[0])].first;
          const bool means = r.own ? cm == m && dot == std::string_view::npos
                             : r.text || dot == std::string_view::npos
                                 ? r.text
                                 : MayMean(modules[cm], head.substr(0, dot));
          if (means) classes[c].mentions.push_back(Edge{from, 0, r.guarded});
        }
      }
    }
  }
  return classes;
}

// A mention of the class from a place that runs, not behind a check.
bool RunsUnguarded(const Edge& e, const std::vector<char>& reached,
                   const std::vector<char>& guarded) {
  if (e.guarded) return false;
  return e.from == kRoot ||
         (reached[static_cast<std::size_t>(e.from)] && !guarded[static_cast<std::size_t>(e.from)]);
}

// Guarded: the greatest set where every call from a reached place is behind a check, or sits in
// a function itself only called behind one. A method is called from anywhere its object goes,
// but an object exists only where its class is built: the methods of a class mentioned only
// behind checks (`elif prefetch_mode == 'cuda': CUDAPrefetcher(...)`) are guarded with it.
std::vector<char> Guarded(const DefIndex& x, const std::vector<Edge>& edges,
                          const std::vector<ClassUse>& classes, const std::vector<char>& reached,
                          const std::vector<char>& open) {
  const std::size_t n = x.defs.size();
  std::vector<char> pinned(n, 0);  // A method of a class built only behind checks, so far.
  for (const ClassUse& c : classes) {
    if (c.registered || c.mentions.empty()) continue;
    for (int id : c.methods) pinned[static_cast<std::size_t>(id)] = 1;
  }
  std::vector<char> guarded(n, 0);
  for (std::size_t id = 0; id < n; ++id)
    guarded[id] = static_cast<char>(reached[id] && !x.root[id] && (!open[id] || pinned[id]));
  for (bool changed = true; changed;) {
    changed = false;
    for (const Edge& e : edges) {
      const std::size_t to = static_cast<std::size_t>(e.to);
      if (!guarded[to] || e.guarded || pinned[to]) continue;
      if (e.from != kRoot &&
          (!reached[static_cast<std::size_t>(e.from)] || guarded[static_cast<std::size_t>(e.from)]))
        continue;
      guarded[to] = 0;
      changed = true;
    }
    for (const ClassUse& c : classes) {
      const std::size_t first = static_cast<std::size_t>(c.methods[0]);
      if (!pinned[first]) continue;
      if (std::none_of(c.mentions.begin(), c.mentions.end(),
                       [&](const Edge& e) { return RunsUnguarded(e, reached, guarded); }))
        continue;
      // Built where it runs: its methods are as guarded as their own calls make them.
      for (int id : c.methods) {
        const std::size_t i = static_cast<std::size_t>(id);
        pinned[i] = 0;
        if (open[i]) guarded[i] = 0;
      }
      changed = true;
    }
  }
  return guarded;
}

// CUDA defaults: every mention of the owner from a place that runs must be a call passing the
// parameter. A mention that is no call (a base class, a callback) may use the default.
std::vector<std::vector<char>> OverriddenDefaults(const std::vector<CallModule>& modules,
                                                  const DefIndex& x,
                                                  const std::vector<char>& reached) {
  std::vector<std::vector<char>> overridden(modules.size());
  for (std::size_t m = 0; m < modules.size(); ++m) {
    for (const PyDefault& d : modules[m].defaults) {
      std::size_t calls = 0;
      bool all = true;
      for (std::size_t c = 0; c < modules.size() && all; ++c) {
        for (const PyRef& r : modules[c].refs) {
          const auto dot = r.target.rfind('.');
          const bool named =
              r.own ? c == m && r.target == d.owner
              : r.text || dot == std::string::npos
                  ? r.text && r.target == d.owner
                  : std::string_view(r.target).substr(dot + 1) == d.owner &&
                        MayMean(modules[m], std::string_view(r.target).substr(0, dot));
          if (!named) continue;
          if (r.in_main && !modules[c].entry) continue;
          if (!r.in_def.empty()) {
            auto it = x.local[c].find(r.in_def);
            if (it != x.local[c].end() && !reached[static_cast<std::size_t>(it->second)]) continue;
          }
          const bool passes =
              r.call && !r.text && !r.spread &&
              (std::find(r.keywords.begin(), r.keywords.end(), d.param) != r.keywords.end() ||
               (d.index >= 0 && r.positional > d.index));
          if (!passes) {
            all = false;
            break;
          }
          ++calls;
        }
      }
      overridden[m].push_back(static_cast<char>(all && calls > 0));
    }
  }
  return overridden;
}

}  // namespace

CallPathResult CallPaths(const std::vector<CallModule>& modules) {
  const DefIndex x = IndexDefs(modules);
  const std::vector<Edge> edges = CallEdges(modules, x);
  std::vector<char> open(x.defs.size(), 0);
  const std::vector<char> reached = Reach(modules, x, edges, open);
  const std::vector<char> guarded = Guarded(x, edges, ClassUses(modules, x), reached, open);
  CallPathResult result;
  result.defs.resize(modules.size());
  for (std::size_t m = 0; m < modules.size(); ++m) result.defs[m].resize(modules[m].defs.size());
  for (std::size_t id = 0; id < x.defs.size(); ++id)
    result.defs[x.defs[id].first][x.defs[id].second] = DefPath{reached[id] != 0, guarded[id] != 0};
  result.overridden = OverriddenDefaults(modules, x, reached);
  return result;
}

}  // namespace dt::scan
