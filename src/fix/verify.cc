#include "fix/verify.h"

#include "bundle/bundle.h"
#include "util/fs.h"
#include "util/scoped_dir.h"

namespace dt::fix {

namespace fs = std::filesystem;

namespace {

// Whether a fixed file lies at or under `rel` ("" is the root).
bool HoldsFixed(const std::map<std::string, std::string>& fixed, const std::string& rel) {
  if (rel.empty()) return !fixed.empty();
  auto it = fixed.lower_bound(rel);
  return it != fixed.end() && (it->first == rel || it->first.starts_with(rel + "/"));
}

Status Mirror(const fs::path& src, const fs::path& dest, const std::string& rel,
              const std::map<std::string, std::string>& fixed) {
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) return MakeError(ErrorCode::kIo, "cannot make folder: " + ec.message(), dest.string());
  for (fs::directory_iterator it(src, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == ".git") continue;
    const std::string child = rel.empty() ? name : rel + "/" + name;
    const fs::path target = dest / name;
    if (auto f = fixed.find(child); f != fixed.end()) {
      if (auto st = WriteFileAtomic(target, f->second); !st) return st;
      continue;
    }
    if (it->is_directory(ec) && !it->is_symlink(ec) && HoldsFixed(fixed, child)) {
      if (auto st = Mirror(it->path(), target, child, fixed); !st) return st;
      continue;
    }
    fs::create_symlink(fs::absolute(it->path()), target, ec);
    if (ec) return MakeError(ErrorCode::kIo, "cannot link: " + ec.message(), target.string());
  }
  if (ec) return MakeError(ErrorCode::kIo, "cannot list folder: " + ec.message(), src.string());
  return OkStatus();
}

Result<bundle::RunOutcome> RunIn(const fs::path& dir, const fs::path& bundle,
                                 const VerifyOptions& o, Io& io) {
  CurrentDirectory here(dir);
  if (!here.ok()) return MakeError(ErrorCode::kIo, "cannot enter the copy", dir.string());
  bundle::RunOptions run;
  run.track = "cpu";
  run.out_dir = bundle;
  run.command = o.command;
  run.steps = o.steps;
  run.seed = o.seed;
  run.redirect_cuda = "cpu";  // The original needs it; for the fixed copy it changes nothing.
  run.collect_env = false;
  run.measure_peak = false;  // The comparison needs no cost prediction.
  run.force = true;
  run.quiet = true;
  run.timeout_s = o.timeout_s;
  return bundle::RunTrack(run, io);
}

bool IsDeviceValue(std::string_view v) {
  if (v == "cpu" || v == "mps" || v == "cuda") return true;
  if (v.starts_with("cuda:") && v.size() > 5)
    return v.substr(5).find_first_not_of("0123456789") == std::string_view::npos;
  return false;
}

// An option name about the device: --device, --gpu, --gpus, --accelerator, train.device, ...
bool IsDeviceOption(std::string_view name) {
  while (!name.empty() && name.front() == '-') name.remove_prefix(1);
  const std::size_t dot = name.rfind('.');
  if (dot != std::string_view::npos) name.remove_prefix(dot + 1);
  return name == "device" || name == "accelerator" || name == "gpu" || name == "gpus" ||
         name == "gpu_ids" || name == "gpu-ids";
}

}  // namespace

Status MirrorProject(const fs::path& root, const fs::path& dest,
                     const std::map<std::string, std::string>& fixed) {
  return Mirror(fs::absolute(root), dest, "", fixed);
}

std::string PinnedDevice(const std::vector<std::string>& command) {
  for (std::size_t i = 1; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a == "--cpu" || a == "--no-cuda" || a == "--no_cuda" || a == "--use-cpu") return a;
    const std::size_t eq = a.find('=');
    if (eq != std::string::npos) {
      if (IsDeviceOption(std::string_view(a).substr(0, eq)) &&
          (IsDeviceValue(std::string_view(a).substr(eq + 1)) || a.substr(eq + 1) == "-1"))
        return a;
      continue;
    }
    if (a.starts_with("-") && IsDeviceOption(a) && i + 1 < command.size() &&
        (IsDeviceValue(command[i + 1]) || command[i + 1] == "-1"))
      return a + " " + command[i + 1];
  }
  return "";
}

Result<VerifyResult> Verify(const VerifyOptions& o, Io& io) {
  std::optional<TempDir> temp;
  fs::path work;
  if (o.keep) {
    work = fs::absolute(*o.keep);
  } else {
    auto made = TempDir::Make("dualtrack-fix-");
    if (!made) return made.take_error();
    temp.emplace(std::move(*made));
    work = temp->path();
  }
  const fs::path original = work / "original", fixed = work / "fixed";
  if (auto st = MirrorProject(o.root, original, {}); !st) return st.error();
  if (auto st = MirrorProject(o.root, fixed, o.fixed); !st) return st.error();
  auto a = RunIn(original, work / "runs" / "original", o, io);
  if (!a) return a.take_error();
  auto b = RunIn(fixed, work / "runs" / "fixed", o, io);
  if (!b) return b.take_error();
  VerifyResult r;
  for (const auto* side : {&*a, &*b}) {
    if (side->outcome == bundle::OutcomeKind::kFinished) continue;
    const char* which = side == &*a ? "the original" : "the fixed project";
    if (side->outcome == bundle::OutcomeKind::kTracerError) {
      // Ours, not the project's: neither side says anything about the edit.
      r.summary = std::string("not verified: dualtrack's tracer failed while running ") + which +
                  " (" + side->reason + ")";
    } else {
      r.summary = std::string("not verified: ") + which + " did not finish (" +
                  ToString(side->outcome) + (side->reason.empty() ? "" : ": " + side->reason) + ")";
    }
    if (!side->stderr_tail.empty()) r.summary += "\n" + side->stderr_tail;
    return r;
  }
  compare::CompareOptions c;
  c.a = (work / "runs" / "fixed").string();
  c.b = (work / "runs" / "original").string();
  c.atol = 0;
  c.rtol = 0;
  c.strict_dtype = true;
  auto cmp = compare::Compare(c);
  if (!cmp) return cmp.take_error();
  r.comparison = std::move(*cmp);
  const auto& rep = r.comparison;
  r.verified = rep.verdict == compare::Outcome::kPass && rep.n_pass > 0;
  const std::string counts = std::to_string(rep.n_pass) + " tensor" + (rep.n_pass == 1 ? "" : "s") +
                             " and " + std::to_string(rep.metrics.size()) + " metric" +
                             (rep.metrics.size() == 1 ? "" : "s") + ", seed " +
                             std::to_string(o.seed) + ", " + std::to_string(o.steps) + " step" +
                             (o.steps == 1 ? "" : "s");
  if (r.verified)
    r.summary =
        "verified: the fixed project is bitwise equal to the original on the CPU (" + counts + ")";
  else if (rep.n_pass == 0 && rep.n_fail == 0)
    r.summary =
        "not verified: the runs captured no tensors to compare (does the command train a step?)";
  else
    r.summary = "not verified: " + rep.summary;
  return r;
}

}  // namespace dt::fix
