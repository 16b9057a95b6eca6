#include "scan/call_paths.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dt::scan {
namespace {

PyTopDef Def(std::string name, bool registered = false) {
  PyTopDef d;
  d.name = std::move(name);
  d.registered = registered;
  return d;
}

// A mention of `target` from `in_def` (empty: module level).
PyRef Ref(std::string target, std::string in_def = "", bool guarded = false) {
  PyRef r;
  r.target = std::move(target);
  r.in_def = std::move(in_def);
  r.guarded = guarded;
  return r;
}

PyRef Own(std::string target, std::string in_def = "", bool guarded = false) {
  PyRef r = Ref(std::move(target), std::move(in_def), guarded);
  r.own = true;
  return r;
}

CallModule Module(std::vector<std::string> names, bool entry = false) {
  CallModule m;
  m.names = std::move(names);
  m.entry = entry;
  return m;
}

TEST(CallPathsTest, ACheckedCallGuardsTheChainBelowIt) {
  CallModule utils = Module({"pkg.utils", "utils"});
  utils.defs = {Def("wrap"), Def("ddp"), Def("unused")};
  utils.refs = {Own("ddp", "wrap")};
  CallModule train = Module({"train"}, true);
  train.refs = {Ref("pkg.utils.wrap", "", /*guarded=*/true)};
  const auto paths = CallPaths({utils, train});
  EXPECT_TRUE(paths.defs[0][0].reached && paths.defs[0][0].guarded);
  EXPECT_TRUE(paths.defs[0][1].reached && paths.defs[0][1].guarded);  // Called from wrap only.
  EXPECT_FALSE(paths.defs[0][2].reached);
}

TEST(CallPathsTest, OneUncheckedCallFromARunningPlaceUnguards) {
  CallModule utils = Module({"pkg.utils"});
  utils.defs = {Def("ddp"), Def("helper")};
  utils.refs = {Own("ddp", "helper")};  // helper itself is never called: its call does not count.
  CallModule train = Module({"train"}, true);
  train.refs = {Ref("pkg.utils.ddp", "", true)};
  auto paths = CallPaths({utils, train});
  EXPECT_TRUE(paths.defs[0][0].guarded);
  EXPECT_FALSE(paths.defs[0][1].reached);
  train.refs.push_back(Ref("pkg.utils.ddp"));
  paths = CallPaths({utils, train});
  EXPECT_FALSE(paths.defs[0][0].guarded);
}

TEST(CallPathsTest, ImportsResolveThroughPackagesAndLongerRoots) {
  CallModule mod = Module({"pkg.sub.mod", "sub.mod", "mod"});
  mod.defs = {Def("f"), Def("g"), Def("h")};
  CallModule other = Module({"other"});
  other.defs = {Def("f")};
  CallModule train = Module({"train"}, true);
  train.refs = {Ref("pkg.sub.f"),                // Re-exported by pkg/sub/__init__.py.
                Ref("vendored.pkg.sub.mod.g")};  // The same module under a longer root.
  const auto paths = CallPaths({mod, other, train});
  EXPECT_TRUE(paths.defs[0][0].reached);
  EXPECT_TRUE(paths.defs[0][1].reached);
  EXPECT_FALSE(paths.defs[0][2].reached);
  EXPECT_FALSE(paths.defs[1][0].reached);  // pkg.sub.f cannot mean other.f.
}

TEST(CallPathsTest, AnotherScriptsMainBlockNeverRuns) {
  CallModule tool = Module({"tool"});
  tool.defs = {Def("main")};
  PyRef in_main = Own("main");
  in_main.in_main = true;
  tool.refs = {in_main};
  auto paths = CallPaths({tool, Module({"train"}, true)});
  EXPECT_FALSE(paths.defs[0][0].reached);
  tool.entry = true;  // Its own script: everything in an entry counts as run.
  paths = CallPaths({tool});
  EXPECT_TRUE(paths.defs[0][0].reached);
}

TEST(CallPathsTest, DynamicUsesCountAsCalls) {
  CallModule models = Module({"models"});
  models.defs = {Def("build", /*registered=*/true), Def("resnet"), Def("vit")};
  PyRef text = Ref("resnet");
  text.text = true;  // getattr(models, "resnet")
  CallModule train = Module({"train"}, true);
  train.refs = {text};
  const auto paths = CallPaths({models, train});
  EXPECT_TRUE(paths.defs[0][0].reached);
  EXPECT_TRUE(paths.defs[0][1].reached);
  EXPECT_FALSE(paths.defs[0][2].reached);
}

TEST(CallPathsTest, AMethodIsGuardedOnlyWhenNoCallCanHideFromItsClass) {
  CallModule blocks = Module({"blocks"});
  PyTopDef nested = Def("Block.forward_nested");
  nested.method = true;
  PyTopDef forward = Def("Block.forward");
  forward.method = true;
  blocks.defs = {Def("bias"), nested, forward};
  blocks.refs = {Own("bias", "Block.forward_nested"),
                 Own("Block.forward_nested", "Block.forward", true)};
  auto paths = CallPaths({blocks, Module({"hub"}, true)});
  EXPECT_TRUE(paths.defs[0][1].reached && paths.defs[0][1].guarded);
  EXPECT_TRUE(paths.defs[0][0].guarded);   // Through the guarded method.
  EXPECT_FALSE(paths.defs[0][2].guarded);  // forward: called by torch, from anywhere.
  blocks.attrs = {"forward_nested"};       // block.forward_nested(x) somewhere.
  paths = CallPaths({blocks, Module({"hub"}, true)});
  EXPECT_TRUE(paths.defs[0][1].reached);
  EXPECT_FALSE(paths.defs[0][1].guarded);
  EXPECT_FALSE(paths.defs[0][0].guarded);
  blocks.attrs.clear();
  blocks.refs.pop_back();  // Never named: a method may still be called (a hook, a callback).
  paths = CallPaths({blocks, Module({"hub"}, true)});
  EXPECT_TRUE(paths.defs[0][1].reached);
  EXPECT_FALSE(paths.defs[0][1].guarded);
}

TEST(CallPathsTest, ACudaDefaultIsOverriddenOnlyWhenEveryCallPassesIt) {
  CallModule fid = Module({"pkg.fid"});
  fid.defaults = {PyDefault{"FID", "device", 1, 3}};
  CallModule train = Module({"train"}, true);
  PyRef by_keyword = Ref("pkg.fid.FID");
  by_keyword.call = true;
  by_keyword.keywords = {"device"};
  PyRef by_position = Ref("pkg.fid.FID");
  by_position.call = true;
  by_position.positional = 2;
  train.refs = {by_keyword, by_position};
  EXPECT_TRUE(CallPaths({fid, train}).overridden[0][0]);
  PyRef short_call = by_position;
  short_call.positional = 1;  // FID(dl): the default is used.
  train.refs.push_back(short_call);
  EXPECT_FALSE(CallPaths({fid, train}).overridden[0][0]);
  PyRef spread = by_keyword;
  spread.keywords.clear();
  spread.spread = true;  // FID(**cfg): may or may not pass it.
  train.refs = {by_keyword, spread};
  EXPECT_FALSE(CallPaths({fid, train}).overridden[0][0]);
  train.refs = {};  // Never called: nothing is concluded about the default.
  EXPECT_FALSE(CallPaths({fid, train}).overridden[0][0]);
}

TEST(CallPathsTest, AClassBuiltOnlyBehindAChecksGuardsAllItsMethods) {
  // `elif prefetch_mode == "cuda": CUDAPrefetcher(loader)`: __init__ and next() run only where the
  // object exists, however generic their names (`prefetcher.next()` from anywhere).
  CallModule prefetch = Module({"prefetch"});
  PyTopDef init = Def("CUDAPrefetcher.__init__");
  init.method = true;
  PyTopDef next = Def("CUDAPrefetcher.next");
  next.method = true;
  prefetch.defs = {init, next};
  prefetch.attrs = {"next"};
  CallModule train = Module({"train"}, true);
  train.defs = {Def("train_pipeline")};
  train.refs = {Ref("prefetch.CUDAPrefetcher", "train_pipeline", /*guarded=*/true),
                Own("train_pipeline")};
  auto paths = CallPaths({prefetch, train});
  EXPECT_TRUE(paths.defs[0][0].reached && paths.defs[0][0].guarded);
  EXPECT_TRUE(paths.defs[0][1].reached && paths.defs[0][1].guarded);
  // One unchecked mention (a base class, a second construction) and the methods run anywhere.
  train.refs.push_back(Ref("prefetch.CUDAPrefetcher", "train_pipeline"));
  paths = CallPaths({prefetch, train});
  EXPECT_FALSE(paths.defs[0][0].guarded);
  EXPECT_FALSE(paths.defs[0][1].guarded);
  // A class a registry decorator builds is built where no mention shows: never pinned.
  train.refs.pop_back();
  prefetch.defs[0].class_registered = prefetch.defs[1].class_registered = true;
  paths = CallPaths({prefetch, train});
  EXPECT_FALSE(paths.defs[0][0].guarded);
}

}  // namespace
}  // namespace dt::scan
