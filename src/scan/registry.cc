#include "scan/registry.h"

#include <toml++/toml.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/fs.h"
#include "util/json_fields.h"
#include "util/strings.h"

namespace dt::scan {

namespace {

// "torch" of "torch.cuda.amp".
std::string_view TopOf(std::string_view dotted) { return dotted.substr(0, dotted.find('.')); }

using nlohmann::json;

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// What the registry's data says of one trigger word (Registry::BuildTriggers).
struct TriggerNeed {
  bool finding = false;                         // It can make a finding (else only guards read it).
  bool alone = false;                           // Some finding needs nothing else.
  std::vector<std::vector<std::string>> needs;  // Else: co-words, all of one alternative.
  // Per alternative of `needs`: its co-words are module names (`torch` of torch.compile), which
  // the finding needs written as whole names.
  std::vector<bool> names;
  bool part = false;  // Some finding finds it inside a longer name or text (not only whole).
};

// The longest literal run of a glob within one dotted component, lower-cased ("trainingarguments"
// of "transformers.*TrainingArguments", "8bit" of "*8bit*"); empty when no run has three bytes.
// Code that matches the glob writes every component of the name somewhere (its import or its use)
// and a value's literal bytes as they are, so the run occurs in the file's text.
std::string GlobLiteral(std::string_view glob) {
  std::string best;
  std::string run;
  bool in_class = false;
  for (char c : glob) {
    if (in_class) {
      in_class = c != ']';
      continue;
    }
    if (c == '*' || c == '?' || c == '[' || c == '.') {
      if (run.size() > best.size()) best = run;
      run.clear();
      in_class = c == '[';
      continue;
    }
    run += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  }
  if (run.size() > best.size()) best = run;
  return best.size() >= 3 ? best : std::string();
}

// The file-level words: those that can make a finding, lower-cased and merged, without the ones
// that cannot change the answer. A word that contains a word admitting alone wherever it stands
// adds nothing (`cudaextension` holds `cud`), nor does an alternative with a co-word that contains
// one.
std::vector<FileTrigger> FileTriggersOf(const std::map<std::string, TriggerNeed>& words) {
  std::map<std::string, TriggerNeed> merged;
  for (const auto& [w, need] : words) {
    if (!need.finding) continue;
    TriggerNeed& m = merged[Lower(w)];
    m.alone |= need.alone;
    m.part |= need.part;
    m.needs.insert(m.needs.end(), need.needs.begin(), need.needs.end());
    m.names.insert(m.names.end(), need.names.begin(), need.names.end());
  }
  // A whole-name word inside a longer text does not occur (`bitsandbytes` in
  // `BitsAndBytesConfig`): only the words found anywhere make the longer ones redundant, and a
  // whole-name word makes redundant only a module name equal to it (`triton.jit`'s `jit` needs the
  // name `triton`, which admits alone).
  std::vector<std::string> alone;
  std::set<std::string> alone_names;
  for (const auto& [w, need] : merged) {
    if (need.alone && need.part) alone.push_back(w);
    if (need.alone && !need.part) alone_names.insert(w);
  }
  // Whether `text` occurring means that a word admitting alone (other than `except`) occurs.
  auto holds_alone = [&](const std::string& text, const std::string& except) {
    for (const auto& a : alone)
      if (a != except && Contains(text, a)) return true;
    return false;
  };
  std::vector<FileTrigger> out;
  for (auto& [w, need] : merged) {
    if (holds_alone(w, w)) continue;
    FileTrigger t{w, {}, !need.part};
    if (!need.alone) {
      for (std::size_t a = 0; a < need.needs.size(); ++a) {
        auto& alt = need.needs[a];
        bool redundant = false;
        for (const auto& c : alt)
          redundant |= holds_alone(c, std::string()) || (need.names[a] && alone_names.count(c));
        if (!redundant) t.needs.push_back(std::move(alt));
      }
      if (t.needs.empty()) continue;
    }
    out.push_back(std::move(t));
  }
  return out;
}

Result<json> ReadJson(const std::filesystem::path& file) {
  auto text = ReadFile(file, std::uint64_t{16} << 20);
  if (!text) return text.take_error();
  return ParseJson(*text, file.string());
}

std::vector<std::string> StrList(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

Result<Rule> ParseRule(const json& j, const std::string& file) {
  Rule r;
  r.code = JsonString(j, "code");
  r.title = JsonString(j, "title");
  r.message = JsonString(j, "message");
  r.replacement = JsonString(j, "replacement");
  r.explanation = JsonString(j, "explanation");
  auto sev = ParseSeverity(JsonString(j, "severity"));
  if (r.code.empty() || !sev) {
    return MakeError(ErrorCode::kInput,
                     "rule needs a code and a severity (portable, fixable, "
                     "replace, blocker): " +
                         j.dump(),
                     file);
  }
  auto cls = ParseFindingClass(JsonString(j, "class"));
  if (!cls) {
    return MakeError(ErrorCode::kInput,
                     "rule " + r.code + ": class must be device, library, extension or environment",
                     file);
  }
  r.cls = *cls;
  r.severity = *sev;
  if (auto m = j.find("mps_only"); m != j.end()) {
    if (!m->is_boolean())
      return MakeError(ErrorCode::kInput, "rule " + r.code + ": mps_only must be true or false",
                       file);
    r.mps_only = m->get<bool>();
  }
  if (auto m = j.find("placement"); m != j.end()) {
    if (!m->is_boolean())
      return MakeError(ErrorCode::kInput, "rule " + r.code + ": placement must be true or false",
                       file);
    r.placement = m->get<bool>();
  }
  if (auto fix = j.find("fix"); fix != j.end()) {
    if (!fix->is_object())
      return MakeError(ErrorCode::kInput, "rule " + r.code + ": fix must be an object", file);
    r.fix = JsonString(*fix, "safety");
    r.fix_before = JsonString(*fix, "before");
    r.fix_after = JsonString(*fix, "after");
    if (r.fix != "safe" && r.fix != "unsafe")
      return MakeError(ErrorCode::kInput, "rule " + r.code + ": fix.safety must be safe or unsafe",
                       file);
  }
  if (r.message.empty()) r.message = r.title.empty() ? r.code : r.title;
  return r;
}

}  // namespace

std::string NormalizePackageName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  bool sep = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      sep = true;
      continue;
    }
    if (sep && !out.empty()) out.push_back('-');
    sep = false;
    out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  }
  return out;
}

std::string FormatMessage(const Rule& rule, std::string_view name) {
  std::string out = rule.message;
  auto pos = out.find("{name}");
  if (pos != std::string::npos) out.replace(pos, 6, name);
  return out;
}

Status Registry::LoadRules(const json& doc, const std::string& file,
                           std::set<std::string>& referenced) {
  if (!doc.is_object() || !doc.contains("rules") || !doc["rules"].is_array())
    return MakeError(ErrorCode::kInput, "expected an object with a \"rules\" array", file);
  for (const auto& j : doc["rules"]) {
    auto r = ParseRule(j, file);
    if (!r) return r.take_error();
    if (JsonBool(j, "retired", false)) retired_.insert(r->code);
    rule_index_[r->code] = rules_.size();
    rules_.push_back(std::move(*r));
  }
  if (auto st = LoadPythonApis(doc, file, referenced); !st) return st;
  if (auto st = LoadPythonPatterns(doc, file, referenced); !st) return st;
  for (auto& name : StrList(doc, "launch_env")) launch_env_.insert(std::move(name));
  for (auto& name : StrList(doc, "launch_guards")) {
    if (name.size() < 64) launch_guard_lengths_ |= std::uint64_t{1} << name.size();
    if (!name.empty()) launch_guard_ends_ |= std::uint64_t{1} << LaunchEndsSlot(name);
    launch_guards_.insert(std::move(name));
  }
  return OkStatus();
}

Status Registry::LoadPythonApis(const json& doc, const std::string& file,
                                std::set<std::string>& referenced) {
  auto it = doc.find("python_apis");
  if (it == doc.end() || !it->is_array()) return OkStatus();
  for (const auto& j : *it) {
    PythonApi api;
    api.name = JsonString(j, "name");
    api.code = JsonString(j, "code");
    api.guard = JsonBool(j, "guard", false);
    api.replacement = JsonString(j, "replacement");
    api.unless_argument = JsonString(j, "unless_argument");
    if (auto p = j.find("unless_position"); j.is_object() && p != j.end() && p->is_number_integer())
      api.unless_position = p->get<int>();
    api.trigger = JsonString(j, "trigger");
    api.only_with = JsonString(j, "only_with");
    if (api.name.empty() || (!api.guard && !FindRule(api.code)))
      return MakeError(ErrorCode::kInput, "python_apis entry names no known rule: " + j.dump(),
                       file);
    if (!api.guard) referenced.insert(api.code);
    api_index_[api.name] = apis_.size();
    api_tops_.emplace(TopOf(api.name));
    apis_.push_back(std::move(api));
  }
  // A condition drops every finding of its code, so no other API may emit that code.
  project_conditions_.clear();
  for (const auto& api : apis_) {
    if (api.only_with.empty()) continue;
    for (const auto& other : apis_)
      if (&other != &api && other.code == api.code)
        return MakeError(ErrorCode::kInput,
                         "python_apis: " + api.name + " has an only_with condition, so its code " +
                             api.code + " cannot also be " + other.name + "'s",
                         file);
    project_conditions_.push_back(api);
  }
  if (project_conditions_.size() > 32)  // FileResult keeps them as bits of a 32-bit word.
    return MakeError(ErrorCode::kInput, "python_apis: more than 32 only_with conditions", file);
  return OkStatus();
}

// python_keywords (`load_in_8bit=True`) and python_strings (`"paged_adamw_8bit"`).
Status Registry::LoadPythonPatterns(const json& doc, const std::string& file,
                                    std::set<std::string>& referenced) {
  if (auto it = doc.find("python_keywords"); it != doc.end() && it->is_array()) {
    for (const auto& j : *it) {
      PythonKeyword kw;
      kw.keyword = JsonString(j, "keyword");
      kw.value = JsonString(j, "value");
      kw.call = JsonString(j, "call");
      kw.code = JsonString(j, "code");
      kw.replacement = JsonString(j, "replacement");
      if (kw.keyword.empty() || !FindRule(kw.code))
        return MakeError(ErrorCode::kInput,
                         "python_keywords entry needs a keyword and a known rule: " + j.dump(),
                         file);
      referenced.insert(kw.code);
      keywords_[kw.keyword].push_back(std::move(kw));
    }
  }
  if (auto it = doc.find("python_strings"); it != doc.end() && it->is_array()) {
    for (const auto& j : *it) {
      PythonKeyword sr;
      sr.value = JsonString(j, "value");
      sr.code = JsonString(j, "code");
      sr.replacement = JsonString(j, "replacement");
      if (sr.value.empty() || !FindRule(sr.code))
        return MakeError(ErrorCode::kInput,
                         "python_strings entry needs a value and a known rule: " + j.dump(), file);
      referenced.insert(sr.code);
      strings_.push_back(std::move(sr));
    }
  }
  return OkStatus();
}

// The detectors and the data must agree on the codes, both ways (a renamed code would otherwise
// silently disable its detector, and a rule nothing emits would be documented but never found).
Status Registry::CheckCodes(std::set<std::string> referenced, const std::string& file) const {
  for (std::string_view code : DetectorCodes()) {
    if (!FindRule(code))
      return MakeError(ErrorCode::kInput,
                       "rule " + std::string(code) +
                           " is emitted by a detector but missing from "
                           "the rules",
                       file);
    referenced.insert(std::string(code));
  }
  for (const auto& r : rules_) {
    bool retired = retired_.count(r.code) > 0;
    if (!retired && !referenced.count(r.code))
      return MakeError(ErrorCode::kInput,
                       "rule " + r.code +
                           " is emitted by no detector and named by no data entry "
                           "(mark it \"retired\": true if it is kept only for old suppressions)",
                       file);
  }
  return OkStatus();
}

Status Registry::LoadLibraries(const json& doc, const std::string& file) {
  if (!doc.is_object() || !doc.contains("libraries") || !doc["libraries"].is_array())
    return MakeError(ErrorCode::kInput, "expected an object with a \"libraries\" array", file);
  for (const auto& j : doc["libraries"]) {
    Library lib;
    lib.name = JsonString(j, "name");
    lib.modules = StrList(j, "modules");
    lib.compiled_modules = StrList(j, "compiled_modules");
    lib.modules.insert(lib.modules.end(), lib.compiled_modules.begin(), lib.compiled_modules.end());
    for (const auto& m : lib.compiled_modules) compiled_tops_.emplace(TopOf(m));
    for (auto& p : StrList(j, "packages")) lib.packages.push_back(NormalizePackageName(p));
    lib.alternative = JsonString(j, "alternative");
    lib.kernel_decorators = StrList(j, "kernel_decorators");
    lib.config_words = StrList(j, "config_words");
    if (auto alt = j.find("alternatives"); alt != j.end() && alt->is_object())
      for (const auto& [prefix, text] : alt->items())
        if (text.is_string()) lib.alternatives.emplace_back(prefix, text.get<std::string>());
    for (const auto& m : lib.modules) {
      module_index_[m] = libraries_.size();
      module_tops_.emplace(TopOf(m));
    }
    libraries_.push_back(std::move(lib));
  }
  return OkStatus();
}

Result<Registry> Registry::Load(const std::filesystem::path& dir) {
  Registry reg;
  const std::string rules_file = (dir / "rules.json").string();
  auto rules = ReadJson(rules_file);
  if (!rules) return rules.take_error();
  std::set<std::string> referenced;  // Codes that data entries name.
  if (auto st = reg.LoadRules(*rules, rules_file, referenced); !st) return st.take_error();
  if (auto st = reg.CheckCodes(std::move(referenced), rules_file); !st) return st.take_error();
  const std::string libs_file = (dir / "libraries.json").string();
  auto libs = ReadJson(libs_file);
  if (!libs) return libs.take_error();
  if (auto st = reg.LoadLibraries(*libs, libs_file); !st) return st.take_error();
  reg.BuildTriggers();
  return reg;
}

void Registry::BuildTriggers() {
  // What the data says of each word: whether it can make a finding at all (a guard word such as
  // `hip` or `world_size` only decides whether another finding is guarded), and the co-words the
  // finding needs.
  std::map<std::string, TriggerNeed> words;
  // `whole`: the word's findings all need it as a whole name (an API's last name, a keyword, a
  // module), not inside a longer one.
  auto add = [&](std::string_view w, std::vector<std::string> co, bool finding, bool whole = true,
                 bool co_names = false) {
    if (w.size() < 3) return;
    TriggerNeed& n = words[std::string(w)];
    if (!finding) return;
    n.finding = true;
    n.part |= !whole;
    const std::string lw = Lower(w);
    std::erase_if(co, [&](const std::string& c) { return c.empty() || Contains(lw, c); });
    if (co.empty()) {
      n.alone = true;
    } else {
      n.needs.push_back(std::move(co));
      n.names.push_back(co_names);
    }
  };
  // The hand-written detectors' own words: CUDA spellings, `.double()`, NCCL, architecture flags,
  // GPU-index and device-map arguments, and `.to(`, whose device index (`.to(0)`,
  // `.to(device=device_id)`) may name no other word. NCCL is found as the string "nccl" or the
  // name `Backend.NCCL`, whole (`is_nccl_available` is a guard).
  const std::vector<std::string> fixed = {
      "cud", "nccl",       "gencode",    "arch=compute_", "arch=sm_",      ".double(",
      "gpu", "device_map", "device_ids", "output_device", "cpp_extension", ".to("};
  for (const auto& w : fixed) add(w, {}, true, w == "nccl");
  // Code that reaches an API writes every component of its name somewhere (import line or dotted
  // use), so one component is enough: none when a word already covers the name (torch.cuda.*),
  // else the last, the most distinctive (`torch.compile`, `peft.prepare_model_for_kbit_training`).
  // A use of the API also writes its module's top name (`torch`), which `compile` alone does not
  // mean: the file is analysed when both occur.
  for (const auto& api : apis_) {
    std::string full = Lower(api.name);
    bool covered = false;
    for (const auto& w : fixed) covered |= Contains(full, w);
    if (covered) continue;
    std::string_view word = api.trigger.empty()
                                ? std::string_view(api.name).substr(api.name.rfind('.') + 1)
                                : std::string_view(api.trigger);
    add(word, {Lower(TopOf(api.name))}, !api.guard, true, true);
  }
  // A keyword rule's finding needs its value and its callee to match: their literal parts occur.
  for (const auto& [kw, list] : keywords_)
    for (const auto& r : list) add(kw, {GlobLiteral(r.call), GlobLiteral(r.value)}, true);
  for (const auto& r : strings_) {
    // The literal part of the glob before its first wildcard.
    std::string_view v = r.value;
    add(v.substr(0, v.find_first_of("*?[")), {}, true, false);
  }
  for (const auto& g : launch_guards_) add(g, {}, false);
  // A process group created with a backend from elsewhere (`init_process_group(backend=cfg.x)`)
  // names no CUDA word, yet says whether a config file's backend is every run's.
  add("init_process_group", {}, true);
  for (const auto& lib : libraries_) {
    for (const auto& m : lib.modules)
      if (compiled_tops_.count(TopOf(m)) == 0) add(TopOf(m), {}, true);
    for (const auto& d : lib.kernel_decorators)
      add(std::string_view(d).substr(d.rfind('.') + 1), {Lower(TopOf(d))}, true, true, true);
  }
  for (const auto& u : user_rules_) {
    if (!u.python_api.empty()) add(u.python_api.substr(u.python_api.rfind('.') + 1), {}, true);
    if (!u.text.empty()) {
      TriggerNeed& n = words[u.text];
      n.finding = n.alone = n.part = true;
    }
  }
  // A word that contains another adds nothing to a substring search.
  python_triggers_.clear();
  for (const auto& [w, need] : words) {
    bool covered = false;
    for (const auto& [o, unused] : words)
      covered |= o != w && o.size() < w.size() && w.find(o) != std::string::npos;
    if (!covered) python_triggers_.push_back(w);
  }
  python_prefilter_ = std::make_shared<Prefilter>(python_triggers_);
  file_triggers_ = FileTriggersOf(words);
}

const std::vector<PythonKeyword>* Registry::KeywordRules(std::string_view keyword) const {
  auto it = keywords_.find(std::string(keyword));
  return it == keywords_.end() ? nullptr : &it->second;
}

const Library* Registry::KernelDecorator(std::string_view dotted) const {
  for (const auto& lib : libraries_)
    for (const auto& d : lib.kernel_decorators)
      if (d == dotted) return &lib;
  return nullptr;
}

Status Registry::AddUserRules(const std::filesystem::path& file) {
  json doc;
  auto text = ReadFile(file, std::uint64_t{16} << 20);
  if (!text) return text.take_error();
  if (EndsWith(file.string(), ".toml")) {
    try {
      auto tbl = toml::parse(*text, file.string());
      std::ostringstream os;
      os << toml::json_formatter{tbl};
      doc = json::parse(os.str());
    } catch (const toml::parse_error& e) {
      return MakeError(ErrorCode::kInput, std::string(e.description()), file.string(),
                       e.source().begin.line);
    } catch (const json::exception& e) {
      return MakeError(ErrorCode::kInput, e.what(), file.string());
    }
  } else {
    auto j = ReadJson(file);
    if (!j) return j.take_error();
    doc = std::move(*j);
  }
  const json* list = nullptr;
  if (doc.is_object() && doc.contains("rule")) list = &doc["rule"];
  if (doc.is_object() && doc.contains("rules")) list = &doc["rules"];
  if (list == nullptr || !list->is_array())
    return MakeError(ErrorCode::kInput, "expected a \"rule\" (TOML [[rule]]) or \"rules\" array",
                     file.string());
  for (const auto& j : *list) {
    auto r = ParseRule(j, file.string());
    if (!r) return r.take_error();
    if (FindRule(r->code))
      return MakeError(ErrorCode::kInput, "rule " + r->code + " clashes with an existing rule",
                       file.string());
    UserRule u;
    u.python_api = JsonString(j, "python_api");
    u.text = JsonString(j, "text");
    u.files = JsonString(j, "files");
    if (u.python_api.empty() && u.text.empty())
      return MakeError(ErrorCode::kInput, "rule " + r->code + " needs python_api or text",
                       file.string());
    rule_index_[r->code] = rules_.size();
    rules_.push_back(*r);
    u.rule = std::move(*r);
    if (!u.python_api.empty()) {
      PythonApi api;
      api.name = u.python_api;
      api.code = u.rule.code;
      api.user = true;
      api_index_[api.name] = apis_.size();
      api_tops_.emplace(TopOf(api.name));
      apis_.push_back(std::move(api));
    }
    user_rules_.push_back(std::move(u));
  }
  BuildTriggers();
  return OkStatus();
}

const Rule* Registry::FindRule(std::string_view code) const {
  auto it = rule_index_.find(std::string(code));
  return it == rule_index_.end() ? nullptr : &rules_[it->second];
}

const PythonApi* Registry::MatchApi(std::string_view dotted) const {
  if (api_tops_.find(TopOf(dotted)) == api_tops_.end()) return nullptr;
  std::string_view key = dotted;
  while (true) {
    auto it = api_index_.find(key);
    if (it != api_index_.end()) return &apis_[it->second];
    auto dot = key.rfind('.');
    if (dot == std::string::npos) return nullptr;
    key = key.substr(0, dot);
  }
}

const Library* Registry::LibraryForModule(std::string_view dotted) const {
  if (module_tops_.find(TopOf(dotted)) == module_tops_.end()) return nullptr;
  std::string_view key = dotted;
  while (true) {
    auto it = module_index_.find(key);
    if (it != module_index_.end()) return &libraries_[it->second];
    auto dot = key.rfind('.');
    if (dot == std::string::npos) return nullptr;
    key = key.substr(0, dot);
  }
}

bool Registry::HasCodePrefix(std::string_view prefix) const {
  return std::any_of(rules_.begin(), rules_.end(),
                     [&](const Rule& r) { return StartsWith(r.code, prefix); });
}

std::string Registry::ClosestCode(std::string_view code) const {
  std::vector<std::string_view> codes;
  for (const auto& r : rules_) codes.push_back(r.code);
  return ClosestMatch(code, codes);
}

const Library* Registry::LibraryForPackage(std::string_view name) const {
  std::string norm = NormalizePackageName(name);
  for (const auto& lib : libraries_) {
    for (const auto& p : lib.packages) {
      if (p == norm) return &lib;
      if (p.find('*') != std::string::npos && GlobMatch(p, norm)) return &lib;
    }
  }
  return nullptr;
}

std::vector<std::string> Registry::ModuleNeedles() const {
  std::vector<std::string> out;
  for (const auto& lib : libraries_)
    for (const auto& m : lib.modules) out.push_back(m.substr(0, m.find('.')));
  return out;
}

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kPortable:
      return "portable";
    case Severity::kFixable:
      return "fixable";
    case Severity::kReplace:
      return "replace";
    case Severity::kBlocker:
      return "blocker";
  }
  return "fixable";
}

std::optional<Severity> ParseSeverity(std::string_view name) {
  if (name == "portable") return Severity::kPortable;
  if (name == "fixable") return Severity::kFixable;
  if (name == "replace") return Severity::kReplace;
  if (name == "blocker") return Severity::kBlocker;
  return std::nullopt;
}

std::string_view FindingClassName(FindingClass c) {
  switch (c) {
    case FindingClass::kDevice:
      return "device";
    case FindingClass::kLibrary:
      return "library";
    case FindingClass::kExtension:
      return "extension";
    case FindingClass::kEnvironment:
      return "environment";
  }
  return "device";
}

std::optional<FindingClass> ParseFindingClass(std::string_view name) {
  for (FindingClass c : kFindingClasses) {
    if (FindingClassName(c) == name) return c;
  }
  return std::nullopt;
}

}  // namespace dt::scan
