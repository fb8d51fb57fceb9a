// Tests for framework/config: schema defaults, inherit chains, overrides, every kind of rejected
// config (with the exact file:line in the message), and the to_yaml round trip.
// Fixtures live in tests/data/config/; their line numbers are asserted, so edit them with care.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>

#include "framework/config/config.hpp"
#include "framework/core/check.hpp"

namespace iclab_test_config {  // this file's names (unity build: CMakeLists.txt)

using iclab::config::Config;
using iclab::config::load_config;
using iclab::config::Schema;

namespace {

std::string fixture(const std::string& name) { return std::string(ICLAB_SOURCE_DIR) + "/tests/data/config/" + name; }

// Keys of two sections declared interleaved, to check that to_yaml groups them by section.
Schema test_schema() {
    Schema schema;
    schema.add_string_free("experiment", "icl_linear", "which experiment to run")
        .add_int("model.layers", 2, 1, 1024, "number of transformer blocks")
        .add_float("train.lr", 3e-4, 0.0, 1.0, "learning rate")
        .add_int("model.width", 64, 1, 65536, "model width C")
        .add_int("model.heads", 4, 1, 256, "attention heads H")
        .add_string("model.feature_map", "elu1", {"elu1", "identity"}, "kernel feature map")
        .add_int("train.steps", 100, 1, 1000000, "optimizer steps")
        .add_bool("train.use_bias", false, "add a bias to every projection")
        .add_int_list("task.lengths", {8, 16}, 1, 4096, "sequence lengths T")
        .add_float_list("task.noise", {0.0, 0.1}, 0.0, 10.0, "label noise levels")
        .add_string_list("task.triggers", {"a"}, {"a", "b", "c"}, "trigger tokens")
        .add_string_list_free("task.tags", {}, "free-form tags")
        .add_rule([](const Config& cfg) {
            const auto width = cfg.get_int("model.width");
            const auto heads = cfg.get_int("model.heads");
            if (width % heads != 0)
                cfg.fail({"model.width", "model.heads"}, "model.width (" + std::to_string(width) +
                                                             ") must be divisible by model.heads (" +
                                                             std::to_string(heads) + ")");
        });
    return schema;
}

// The what() of the InputError that loading must throw; fails the test when nothing is thrown.
std::string load_error(const std::string& path, const std::vector<std::string>& overrides = {}) {
    try {
        load_config(path, overrides, test_schema());
    } catch (const iclab::InputError& e) {
        return e.what();
    }
    FAIL("expected an iclab::InputError loading " << path);
    return "";
}

std::size_t line_count(const std::string& text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
}

}  // namespace

TEST_CASE("config: missing keys take the schema defaults", "[config]") {
    const Config cfg = load_config(fixture("empty.yaml"), {}, test_schema());
    CHECK(cfg.get_string("experiment") == "icl_linear");
    CHECK(cfg.get_int("model.layers") == 2);
    CHECK(cfg.get_float("train.lr") == 3e-4);
    CHECK(cfg.get_string("model.feature_map") == "elu1");
    CHECK(cfg.get_bool("train.use_bias") == false);
    CHECK(cfg.get_int_list("task.lengths") == std::vector<std::int64_t>{8, 16});
    CHECK(cfg.get_float_list("task.noise") == std::vector<double>{0.0, 0.1});
    CHECK(cfg.get_string_list("task.triggers") == std::vector<std::string>{"a"});
    CHECK(cfg.get_string_list("task.tags").empty());
    CHECK(cfg.origin("model.layers") == "default");
    CHECK(cfg.source_path() == fixture("empty.yaml"));
    CHECK(cfg.overrides().empty());
}

TEST_CASE("config: inherit chain, each file overriding its base, with origins", "[config]") {
    const Config cfg = load_config(fixture("sub/grandchild.yaml"), {}, test_schema());
    CHECK(cfg.get_int("model.width") == 96);  // grandchild
    CHECK(cfg.origin("model.width") == fixture("sub/grandchild.yaml") + ":4");
    CHECK(cfg.get_int("model.layers") == 4);  // child over base
    CHECK(cfg.origin("model.layers") == fixture("child.yaml") + ":3");
    CHECK(cfg.get_int("train.steps") == 200);  // child only
    CHECK(cfg.origin("train.steps") == fixture("child.yaml") + ":5");
    CHECK(cfg.get_float("train.lr") == 0.001);  // base only
    CHECK(cfg.origin("train.lr") == fixture("base.yaml") + ":7");
    CHECK(cfg.get_string_list("task.triggers") == std::vector<std::string>{"a", "b"});
    CHECK(cfg.get_int("model.heads") == 4);  // nowhere: default
    CHECK(cfg.origin("model.heads") == "default");
}

TEST_CASE("config: command-line overrides apply last, in order", "[config]") {
    const std::vector<std::string> overrides = {"model.layers=6", "train.lr=3e-3", "model.layers=8",
                                                "task.triggers=[c,a]", "task.noise=[1, 0.5]", "train.use_bias=on"};
    const Config cfg = load_config(fixture("sub/grandchild.yaml"), overrides, test_schema());
    CHECK(cfg.get_int("model.layers") == 8);
    CHECK(cfg.origin("model.layers") == "command-line override 'model.layers=8'");
    CHECK(cfg.get_float("train.lr") == 3e-3);
    CHECK(cfg.get_string_list("task.triggers") == std::vector<std::string>{"c", "a"});
    CHECK(cfg.get_float_list("task.noise") == std::vector<double>{1.0, 0.5});
    CHECK(cfg.get_bool("train.use_bias") == true);
    CHECK(cfg.get_int("model.width") == 96);  // untouched keys keep their file values
    CHECK(cfg.overrides() == overrides);
}

TEST_CASE("config: unknown keys and sections are rejected with a suggestion", "[config]") {
    const std::string key_error = load_error(fixture("unknown_key.yaml"));
    CHECK(key_error == "config error: " + fixture("unknown_key.yaml") +
                           ":4: model.layrs: unknown key (did you mean 'model.layers'?)");

    const std::string section_error = load_error(fixture("unknown_section.yaml"));
    CHECK(section_error ==
          "config error: " + fixture("unknown_section.yaml") + ":3: modle: unknown section (did you mean 'model'?)");

    // Nothing close: no suggestion.
    const std::string far_error = load_error(fixture("empty.yaml"), {"model.quux_factor=2"});
    CHECK(far_error == "config error: command-line override 'model.quux_factor=2': model.quux_factor: unknown key");
}

TEST_CASE("config: values of the wrong type are rejected, YAML bools follow YAML", "[config]") {
    const std::string message = load_error(fixture("wrong_type.yaml"));
    const std::string file = fixture("wrong_type.yaml");
    CHECK_THAT(message, Catch::Contains(file + ":2: model.layers: expected int, got '2.5'"));
    CHECK_THAT(message, Catch::Contains(file + ":4: train.use_bias: expected bool, got string 'yes'"));
    CHECK_THAT(message, Catch::Contains(file + ":6: task.lengths: item 2: expected list of ints, got 'sixteen'"));
    CHECK(line_count(message) == 3);

    // Unquoted yes is a YAML bool; an int is a valid float.
    const Config cfg = load_config(fixture("bool_words.yaml"), {}, test_schema());
    CHECK(cfg.get_bool("train.use_bias") == true);
    CHECK(cfg.get_float("train.lr") == 1.0);

    CHECK_THAT(load_error(fixture("empty.yaml"), {"train.use_bias=maybe"}),
               Catch::Contains("train.use_bias: expected bool, got 'maybe'"));
    CHECK_THAT(load_error(fixture("empty.yaml"), {"model.layers=[1,2]"}),
               Catch::Contains("model.layers: expected int, got a list"));
    CHECK_THAT(load_error(fixture("empty.yaml"), {"task.lengths=8"}),
               Catch::Contains("task.lengths: expected list of ints, got '8'"));
    CHECK_THAT(load_error(fixture("empty.yaml"), {"experiment="}), Catch::Contains("experiment: expected string, got null"));
    CHECK_THAT(load_error(fixture("section_scalar.yaml")),
               Catch::Contains(fixture("section_scalar.yaml") + ":1: model: is a section: expected a map of keys, got '4'"));
}

TEST_CASE("config: numbers out of range name the range", "[config]") {
    const std::string message = load_error(fixture("out_of_range.yaml"));
    const std::string file = fixture("out_of_range.yaml");
    CHECK_THAT(message, Catch::Contains(file + ":2: model.layers: 2000 is out of range [1, 1024]"));
    CHECK_THAT(message, Catch::Contains(file + ":4: train.lr: -0.5 is out of range [0.0, 1.0]"));
    CHECK_THAT(load_error(fixture("empty.yaml"), {"task.lengths=[8, 0]"}),
               Catch::Contains("task.lengths: item 2: 0 is out of range [1, 4096]"));
    CHECK_THAT(load_error(fixture("empty.yaml"), {"train.lr=.nan"}),
               Catch::Contains("train.lr: .nan is not a finite number"));
}

TEST_CASE("config: strings outside the allowed set name the set", "[config]") {
    CHECK(load_error(fixture("not_in_set.yaml")) ==
          "config error: " + fixture("not_in_set.yaml") +
              ":2: model.feature_map: 'relu' is not one of {elu1, identity}");
    CHECK_THAT(load_error(fixture("empty.yaml"), {"task.triggers=[a, z]"}),
               Catch::Contains("task.triggers: item 2: 'z' is not one of {a, b, c}"));
}

TEST_CASE("config: a failing rule names both keys and where each was set", "[config]") {
    const std::string file = fixture("rule_failure.yaml");
    CHECK(load_error(file) == "config error: " + file +
                                  ":3: model.width (64) must be divisible by model.heads (3) [model.heads from " +
                                  file + ":4]");
    // The first key's origin leads, whatever set it.
    CHECK(load_error(fixture("empty.yaml"), {"model.heads=5"}) ==
          "config error: default: model.width (64) must be divisible by model.heads (5) "
          "[model.heads from command-line override 'model.heads=5']");
    // Rules wait for valid values: with heads rejected, its default (4) must not be judged against 30.
    CHECK(load_error(fixture("empty.yaml"), {"model.heads=0", "model.width=30"}) ==
          "config error: command-line override 'model.heads=0': model.heads: 0 is out of range [1, 256]");
    // Rule satisfied: loads.
    CHECK(load_config(file, {"model.heads=4"}, test_schema()).get_int("model.heads") == 4);
}

TEST_CASE("config: all problems are reported together, one per line", "[config]") {
    const std::string file = fixture("multiple_errors.yaml");
    const std::string message = load_error(file, {"model.layrs=4"});
    CHECK(message == "config error: " + file + ":3: model.layers: expected int, got 'zero'\n" +
                         "config error: " + file + ":4: model.heads: 0 is out of range [1, 256]\n" +
                         "config error: " + file + ":5: model.feature_map: 'relu' is not one of {elu1, identity}\n" +
                         "config error: " + file + ":7: train.stpes: unknown key (did you mean 'train.steps'?)\n" +
                         "config error: command-line override 'model.layrs=4': model.layrs: unknown key "
                         "(did you mean 'model.layers'?)");
}

TEST_CASE("config: a YAML syntax error names file and line", "[config]") {
    const std::string message = load_error(fixture("syntax_error.yaml"));
    CHECK_THAT(message, Catch::StartsWith("config error: " + fixture("syntax_error.yaml") + ":4: YAML syntax error: "));
    CHECK_THAT(load_error(fixture("empty.yaml"), {"task.triggers=[a,"}),
               Catch::Contains("command-line override 'task.triggers=[a,': task.triggers: the value is not valid YAML"));
}

TEST_CASE("config: missing files, bad inherits and duplicate keys", "[config]") {
    CHECK(load_error(fixture("no_such_file.yaml")) ==
          "config error: " + fixture("no_such_file.yaml") + ": cannot open file: no such file");
    CHECK(load_error(fixture("inherit_missing.yaml")) ==
          "config error: " + fixture("no_such_base.yaml") + ": cannot open file: no such file (inherited at " +
              fixture("inherit_missing.yaml") + ":2)");
    CHECK(load_error(fixture("cycle_a.yaml")) == "config error: " + fixture("cycle_b.yaml") +
                                                     ":1: inherit cycle: " + fixture("cycle_a.yaml") + " -> " +
                                                     fixture("cycle_b.yaml") + " -> " + fixture("cycle_a.yaml"));
    CHECK(load_error(fixture("duplicate_key.yaml")) == "config error: " + fixture("duplicate_key.yaml") +
                                                           ":4: model.layers: duplicate key (first set at " +
                                                           fixture("duplicate_key.yaml") + ":2)");
}

TEST_CASE("config: malformed and unknown overrides", "[config]") {
    CHECK(load_error(fixture("empty.yaml"), {"model.layers"}) ==
          "config error: command-line override 'model.layers': expected key.path=value");
    CHECK(load_error(fixture("empty.yaml"), {"model.layrs=4"}) ==
          "config error: command-line override 'model.layrs=4': model.layrs: unknown key (did you mean 'model.layers'?)");
    CHECK_THAT(load_error(fixture("empty.yaml"), {"inherit=base.yaml"}), Catch::Contains("inherit: unknown key"));
    // A whole section as a flow map deep-merges like a file would.
    const Config cfg = load_config(fixture("base.yaml"), {"model={layers: 7}"}, test_schema());
    CHECK(cfg.get_int("model.layers") == 7);
    CHECK(cfg.get_int("model.width") == 64);
}

TEST_CASE("config: to_yaml writes every key and reloads to the same config", "[config]") {
    const Config original = load_config(fixture("sub/grandchild.yaml"),
                                        {"train.lr=3e-4", "experiment=true", "task.tags=['1', 'two words', '']",
                                         "task.noise=[0.1, 1e-7, 2]"},
                                        test_schema());
    const std::string text = original.to_yaml();
    // Sections grouped in declaration order, floats short and still floats, strings quoted.
    CHECK(text ==
          "experiment: \"true\"\n"
          "model:\n"
          "  layers: 4\n"
          "  width: 96\n"
          "  heads: 4\n"
          "  feature_map: \"elu1\"\n"
          "train:\n"
          "  lr: 0.0003\n"
          "  steps: 200\n"
          "  use_bias: false\n"
          "task:\n"
          "  lengths: [8, 16]\n"
          "  noise: [0.1, 1.0e-07, 2.0]\n"
          "  triggers: [\"a\", \"b\"]\n"
          "  tags: [\"1\", \"two words\", \"\"]\n");

    const std::string path = "/tmp/iclab_test_config_roundtrip_" + std::to_string(::getpid()) + ".yaml";
    {
        std::ofstream out(path);
        out << text;
    }
    const Config reloaded = load_config(path, {}, test_schema());
    std::remove(path.c_str());
    CHECK(reloaded.to_yaml() == text);
    CHECK(reloaded.get_string("experiment") == "true");
    CHECK(reloaded.get_float("train.lr") == original.get_float("train.lr"));
    CHECK(reloaded.get_float_list("task.noise") == original.get_float_list("task.noise"));
    CHECK(reloaded.get_string_list("task.tags") == std::vector<std::string>{"1", "two words", ""});
    CHECK(reloaded.get_int("model.width") == 96);
    CHECK(reloaded.origin("model.width") == path + ":4");
}

TEST_CASE("config: asking for an undeclared key or the wrong type is a programming error", "[config]") {
    const Config cfg = load_config(fixture("empty.yaml"), {}, test_schema());
    // iclab::Error but not InputError: the CLI must not report it as a bad config.
    auto is_programming_error = [](auto&& call) {
        try {
            call();
        } catch (const iclab::InputError&) {
            return false;
        } catch (const iclab::Error&) {
            return true;
        }
        return false;
    };
    CHECK(is_programming_error([&] { cfg.get_int("model.layrs"); }));
    CHECK(is_programming_error([&] { cfg.get_float("model.layers"); }));
    CHECK(is_programming_error([&] { cfg.get_string("model.layers"); }));
    CHECK(is_programming_error([&] { cfg.origin("model"); }));
    CHECK(is_programming_error([&] { cfg.fail({"nope"}, "message"); }));
}

TEST_CASE("config: schema declarations are checked", "[config]") {
    Schema schema;
    schema.add_int("model.layers", 2, 1, 8, "blocks");
    CHECK_THROWS_AS(schema.add_int("model.layers", 2, 1, 8, "again"), iclab::Error);
    CHECK_THROWS_AS(schema.add_int("model", 2, 1, 8, "a section"), iclab::Error);
    CHECK_THROWS_AS(schema.add_int("model.layers.inner", 2, 1, 8, "under a key"), iclab::Error);
    CHECK_THROWS_WITH(schema.add_int("model.width", 0, 1, 8, "bad default"),
                      Catch::Contains("default of model.width: 0 is out of range [1, 8]"));
    CHECK_THROWS_AS(schema.add_string("model.map", "relu", {"elu1"}, "bad default"), iclab::Error);
    CHECK_THROWS_AS(schema.add_float("train.lr", 0.5, 1.0, 0.0, "empty range"), iclab::Error);
    CHECK_THROWS_AS(schema.add_bool("inherit.flag", true, "reserved"), iclab::Error);
    CHECK_THROWS_AS(schema.add_bool("model..flag", true, "bad path"), iclab::Error);
    CHECK(schema.keys().size() == 1);
}

TEST_CASE("config: help_text lists every key with type, default, range or set, and help", "[config]") {
    const std::string help = test_schema().help_text();
    CHECK(line_count(help) == 14);  // header, 12 keys, trailing newline
    CHECK_THAT(help, Catch::Matches("(.|\n)*model\\.layers +int +2 +\\[1, 1024\\] +number of transformer blocks\n(.|\n)*"));
    CHECK_THAT(help, Catch::Matches("(.|\n)*model\\.feature_map +string +\"elu1\" +\\{elu1, identity\\} +kernel feature map\n(.|\n)*"));
    CHECK_THAT(help, Catch::Matches("(.|\n)*train\\.lr +float +0\\.0003 +\\[0\\.0, 1\\.0\\] +learning rate\n(.|\n)*"));
    CHECK_THAT(help, Catch::Matches("(.|\n)*task\\.tags +list of strings +\\[\\] +- +free-form tags\n(.|\n)*"));
}

TEST_CASE("config: derive_config takes a parent's values for the keys the other schema declares", "[config]") {
    const Config parent = load_config(fixture("base.yaml"), {"model.layers=6", "train.lr=0.002"}, test_schema());
    Schema child;
    child.add_int("model.layers", 2, 1, 1024, "number of transformer blocks")
        .add_float("train.lr", 3e-4, 0.0, 1.0, "learning rate")
        .add_int("sub.index", 0, 0, 10, "a key the parent does not have");
    const Config derived = iclab::config::derive_config(parent, child, {"sub.index=3"});
    CHECK(derived.get_int("model.layers") == 6);
    CHECK(derived.get_float("train.lr") == 0.002);
    CHECK(derived.origin("model.layers") == parent.origin("model.layers"));
    CHECK(derived.get_int("sub.index") == 3);
    CHECK_FALSE(derived.has("model.width"));  // the parent's keys that the child does not declare are left out
    // overrides are validated as load_config validates them
    CHECK_THROWS_WITH(iclab::config::derive_config(parent, child, {"sub.index=11"}), Catch::Contains("sub.index"));
    CHECK_THROWS_WITH(iclab::config::derive_config(parent, child, {"sub.indx=1"}), Catch::Contains("did you mean 'sub.index'"));
}

TEST_CASE("config files that are not small text files are refused before reading them whole", "[config]") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("iclab_cfg_files_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const auto expect_refused = [](const std::string& path, const std::string& why) {
        CHECK_THROWS_AS(iclab::config::read_config_text(path), iclab::InputError);
        CHECK_THROWS_WITH(iclab::config::read_config_text(path), Catch::Contains(path) && Catch::Contains(why));
    };
    expect_refused(dir.string(), "directory");
    expect_refused("/dev/zero", "not a regular file");
    {
        std::ofstream big(dir / "big.yaml");
        big << "a: '" << std::string(iclab::config::kMaxConfigBytes, 'x') << "'\n";
    }
    expect_refused((dir / "big.yaml").string(), "at most");
    {
        std::ofstream binary(dir / "binary.yaml", std::ios::binary);
        binary << "seed: 1\nmodel:\n  layers: 2\x01\n";
    }
    expect_refused((dir / "binary.yaml").string(), ":3: control character");
    {
        // Invalid UTF-8 (yaml-cpp 0.7 loops forever on this one: found by the config fuzzer)
        std::ofstream bad(dir / "latin1.yaml", std::ios::binary);
        bad << "# Paper 000 \xc2\xa7" << "6.\xf8\xf8\xf8 (x\n seed: 1\n";
    }
    expect_refused((dir / "latin1.yaml").string(), ":1: invalid UTF-8");
    {
        std::ofstream good(dir / "utf8.yaml", std::ios::binary);
        good << "# paper 000 \xc2\xa7" << "6.4, \xe2\x89\x88 0.45, \xf0\x9f\x93\x88\nseed: 1\n";
    }
    CHECK(iclab::config::read_config_text((dir / "utf8.yaml").string()).find("seed: 1") != std::string::npos);
    // Overrides are parsed as YAML too: the same text rules (another yaml-cpp hang the fuzzer found).
    {
        iclab::config::Schema seed_only;
        seed_only.add_int("seed", 0, 0, 100, "seed");
        CHECK_THROWS_WITH(iclab::config::load_config((dir / "utf8.yaml").string(), {"seed=\xff\xff1"}, seed_only),
                          Catch::Contains("override") && Catch::Contains("invalid UTF-8"));
    }
    // A deep inherit chain stops at the cap, naming it; a cycle is named as a cycle.
    for (int i = 0; i < 40; ++i) {
        std::ofstream f(dir / ("c" + std::to_string(i) + ".yaml"));
        f << "inherit: c" << (i + 1) << ".yaml\n";
    }
    { std::ofstream(dir / "c40.yaml") << "seed: 1\n"; }
    const iclab::config::Schema schema = [] {
        iclab::config::Schema s;
        s.add_int("seed", 0, 0, 100, "seed");
        return s;
    }();
    CHECK_THROWS_WITH(iclab::config::load_config((dir / "c0.yaml").string(), {}, schema), Catch::Contains("deeper than 32"));
    { std::ofstream(dir / "x.yaml") << "inherit: y.yaml\n"; }
    { std::ofstream(dir / "y.yaml") << "inherit: x.yaml\n"; }
    CHECK_THROWS_WITH(iclab::config::load_config((dir / "x.yaml").string(), {}, schema), Catch::Contains("inherit cycle"));
    fs::remove_all(dir);
}

TEST_CASE("every float key must be finite", "[config]") {
    iclab::config::Schema schema;
    schema.add_float("train.lr", 1e-3, 0.0, std::numeric_limits<double>::infinity(), "learning rate");
    const std::string file = (std::filesystem::temp_directory_path() / ("iclab_cfg_inf_" + std::to_string(::getpid()) + ".yaml")).string();
    { std::ofstream(file) << "train:\n  lr: 0.01\n"; }
    CHECK(iclab::config::load_config(file, {}, schema).get_float("train.lr") == 0.01);
    CHECK_THROWS_AS(iclab::config::load_config(file, {"train.lr=.inf"}, schema), iclab::InputError);
    CHECK_THROWS_WITH(iclab::config::load_config(file, {"train.lr=.inf"}, schema), Catch::Contains("train.lr") && Catch::Contains("finite"));
    std::filesystem::remove(file);
}

}  // namespace iclab_test_config
