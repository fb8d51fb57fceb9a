// Integrity of the files iclab reads (issue 20), in the library: ICLAA and ICLCA adapter files edited after writing
// (every attribute and dataset that changes the math, the edits that used to corrupt the heap or change outputs
// silently) and results tables whose columns differ in length. Each is refused with InputError (exit 2) naming the
// field; the CLI side of the same corpus is tests/test_integrity_cli.cpp.
#include <catch2/catch.hpp>

#include <H5Cpp.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>

#include "framework/core/rng.hpp"
#include "framework/icl/adapter_file.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/icl/iclaa_adapter.hpp"
#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_integrity {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab;
using namespace iclab_test;

namespace {

model::ModelSpec tiny_spec(model::ModelSpec::Attention attention) {
    model::ModelSpec spec;
    spec.vocab = 11;
    spec.width = 16;
    spec.heads = 2;
    spec.layers = 2;
    spec.max_seq_len = 32;
    spec.mlp = true;
    spec.init_std = 0.4;
    spec.attention = attention;
    return spec;
}

// ICLAA of a 5-token prompt on a random softmax model (D = 8), with prf (F = 6), elu1 (F = D) or a learned-shaped
// two-sided map (F = 6, c not the PRF constant).
struct IclaaCase {
    model::Transformer<double> net{tiny_spec(model::ModelSpec::Attention::softmax)};
    icl::IclaaAdapter adapter;
    explicit IclaaCase(const std::string& map_name) {
        Rng rng(7);
        net.init(rng);
        const std::size_t L = net.spec().layers, H = net.spec().heads, D = net.spec().head_dim();
        icl::LayerHeadMaps maps(L);
        for (auto& layer : maps) {
            if (map_name == "prf") {
                layer.assign(H, nn::random_kernel_features<double>(D, 6, false, std::pow(static_cast<double>(D), -0.25), rng));
            } else if (map_name == "elu1") {
                nn::KernelFeatures<double> map;
                map.kind = nn::KernelMapKind::elu1;
                map.dim = map.features = D;
                map.input_scale = 1.0;
                layer.assign(H, map);
            } else {
                std::vector<double> w0(D * 3), c(6);
                for (auto& x : w0) x = rng.normal(0.0, 0.5);
                for (auto& x : c) x = rng.normal(0.0, 0.3);
                layer.assign(H, icl::two_sided_map(w0, c, D));
            }
        }
        adapter = icl::iclaa_convert(net, {1, 2, 3, 1, 2}, "bcdbc", std::move(maps), map_name, 3, icl::RopeConvention::rotate_then_map);
    }
};

void with_file(const fs::path& file, const std::function<void(H5::H5File&)>& edit) {
    H5::H5File raw(file.string(), H5F_ACC_RDWR);
    edit(raw);
}

void set_string(H5::H5File& file, const std::string& name, const std::string& value) {
    if (file.attrExists(name)) file.removeAttr(name);
    const H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
    const char* text = value.c_str();
    file.createAttribute(name, type, H5::DataSpace(H5S_SCALAR)).write(type, &text);
}

void set_double(H5::H5File& file, const std::string& name, double value) {
    if (file.attrExists(name)) file.removeAttr(name);
    file.createAttribute(name, H5::PredType::IEEE_F64LE, H5::DataSpace(H5S_SCALAR)).write(H5::PredType::NATIVE_DOUBLE, &value);
}

void set_int(H5::H5File& file, const std::string& name, std::int64_t value) {
    if (file.attrExists(name)) file.removeAttr(name);
    file.createAttribute(name, H5::PredType::STD_I64LE, H5::DataSpace(H5S_SCALAR)).write(H5::PredType::NATIVE_INT64, &value);
}

// Rewrites a float dataset through `change`; with keep_checksum false its own checksum attribute is removed too, so that
// only the adapter's content checksum can notice.
void edit_values(H5::H5File& file, const std::string& path, const std::function<void(std::vector<double>&)>& change,
                 bool drop_checksum = false) {
    H5::DataSet dataset = file.openDataSet(path);
    std::vector<double> values(static_cast<std::size_t>(dataset.getSpace().getSimpleExtentNpoints()));
    dataset.read(values.data(), H5::PredType::NATIVE_DOUBLE);
    change(values);
    dataset.write(values.data(), H5::PredType::NATIVE_DOUBLE);
    if (drop_checksum) dataset.removeAttr("checksum");
}

// The reader's refusal: an InputError whose one-line message contains every one of `parts`.
void require_refused(const std::function<void()>& read, const std::vector<std::string>& parts) {
    try {
        read();
        FAIL("the damaged file was accepted");
    } catch (const InputError& error) {
        const std::string message = error.what();
        INFO(message);
        CHECK(message.find('\n') == std::string::npos);
        for (const auto& part : parts) CHECK(message.find(part) != std::string::npos);
    }
}

}  // namespace

TEST_CASE("an ICLAA adapter round trips, and every edit of what changes its math is refused naming the field", "[integrity][iclaa]") {
    Scratch scratch;
    const fs::path file = scratch.path / "a.h5", edited = scratch.path / "e.h5";
    const std::string map_name = GENERATE(as<std::string>{}, "prf", "elu1", "learned");
    IclaaCase made(map_name);
    icl::write_iclaa_adapter(file, made.adapter, false);
    const icl::IclaaAdapter back = icl::read_iclaa_adapter(file);
    CHECK(back.feature_map == map_name);
    CHECK(back.features == made.adapter.features);
    for (std::size_t l = 0; l < back.layers; ++l)
        for (std::size_t h = 0; h < back.heads; ++h) {
            CHECK(back.terms[l][h].b_kv == made.adapter.terms[l][h].b_kv);  // exact: float64 as stored
            CHECK(back.terms[l][h].log_b_d == made.adapter.terms[l][h].log_b_d);
            CHECK(back.maps[l][h].w == made.adapter.maps[l][h].w);
            CHECK(back.terms[l][h].features == &back.maps[l][h]);
        }
    icl::check_iclaa_adapter(made.net, back, "a.h5");  // made for this model

    const auto refused_after = [&](const std::function<void(H5::H5File&)>& edit, const std::vector<std::string>& parts) {
        fs::copy_file(file, edited, fs::copy_options::overwrite_existing);
        with_file(edited, edit);
        require_refused([&] { (void)icl::read_iclaa_adapter(edited); }, parts);
    };
    SECTION("feature_map edited (prf <-> elu1 corrupted the heap in predict) or unknown") {
        refused_after([&](H5::H5File& f) { set_string(f, "feature_map", map_name == "elu1" ? "prf" : "elu1"); }, {"e.h5"});
        refused_after([](H5::H5File& f) { set_string(f, "feature_map", "bogus"); }, {"feature_map", "bogus"});
    }
    SECTION("input_scale, lambda: not finite or not the map's constant") {
        refused_after([](H5::H5File& f) { set_double(f, "input_scale", 100.0); }, {"input_scale"});
        refused_after([](H5::H5File& f) { set_double(f, "lambda", std::nan("")); }, {"lambda"});
        refused_after([](H5::H5File& f) { set_double(f, "lambda", 0.5); }, {"lambda"});
    }
    SECTION("rope_convention: unknown, or another known one (only the content checksum can tell)") {
        refused_after([](H5::H5File& f) { set_string(f, "rope_convention", "sideways"); }, {"rope_convention", "sideways"});
        refused_after([](H5::H5File& f) { set_string(f, "rope_convention", "unrotated"); }, {"content_checksum"});
        refused_after([](H5::H5File& f) { set_int(f, "seed", 4); }, {"content_checksum"});
        refused_after([](H5::H5File& f) { set_string(f, "prompt_text", "zzzzz"); }, {"content_checksum"});
    }
    SECTION("shapes: features, model_layers, model_heads, head_dim, prompt_length; missing datasets") {
        refused_after([](H5::H5File& f) { set_int(f, "features", 4); }, {"e.h5"});
        refused_after([](H5::H5File& f) { set_int(f, "model_layers", 3); }, {"model_layers"});
        refused_after([](H5::H5File& f) { set_int(f, "model_layers", 1); }, {"model_layers"});
        refused_after([](H5::H5File& f) { set_int(f, "model_heads", 1); }, {"e.h5"});
        refused_after([](H5::H5File& f) { set_int(f, "head_dim", 0); }, {"head_dim"});
        refused_after([](H5::H5File& f) { set_int(f, "prompt_length", 4); }, {"prompt_length"});
        refused_after([](H5::H5File& f) { f.unlink("/prompt_tokens"); }, {"/prompt_tokens", "missing"});
        refused_after([](H5::H5File& f) { f.removeAttr("content_checksum"); }, {"content_checksum", "missing"});
    }
    SECTION("values: NaN or inf in the biases and scales, the normalization broken, a map's parameters scaled") {
        refused_after([](H5::H5File& f) { edit_values(f, "/iclaa/blocks.0.log_b_kv", [](auto& v) { v[0] = INFINITY; }); },
                      {"blocks.0.log_b_kv"});
        refused_after([](H5::H5File& f) { edit_values(f, "/iclaa/blocks.0.log_b_kv", [](auto& v) { v[0] = INFINITY; }, true); },
                      {"blocks.0.b_kv", "log scale"});
        refused_after([](H5::H5File& f) { edit_values(f, "/iclaa/blocks.1.b_kv", [](auto& v) { v[2] = std::nan(""); }, true); },
                      {"blocks.1.b_kv", "finite"});
        refused_after([](H5::H5File& f) { edit_values(f, "/iclaa/blocks.1.b_d", [](auto& v) { for (auto& x : v) x *= 10; }, true); },
                      {"blocks.1.b_d", "max"});
        refused_after([](H5::H5File& f) { edit_values(f, "/iclaa/blocks.0.log_b_d", [](auto& v) { v[1] += 1.0; }, true); },
                      {"content_checksum"});
        if (map_name != "elu1") {
            refused_after([](H5::H5File& f) { edit_values(f, "/iclaa/blocks.0.c", [](auto& v) { for (auto& x : v) x *= 10; }); },
                          {"blocks.0.c", "checksum"});
            refused_after([](H5::H5File& f) { edit_values(f, "/iclaa/blocks.0.c", [](auto& v) { for (auto& x : v) x *= 10; }, true); },
                          {map_name == "prf" ? "blocks.0.c" : "content_checksum"});
            refused_after([](H5::H5File& f) { edit_values(f, "/iclaa/blocks.1.w", [](auto& v) { v[0] += 0.5; }, true); },
                          {map_name == "learned" ? "two-sided" : "content_checksum"});
        }
    }
    SECTION("version 1 files (before the content checksum) are refused with what to do") {
        refused_after([](H5::H5File& f) { set_int(f, "format_version", 1); }, {"version 1", "re-convert"});
    }
    SECTION("version 2 files (before hybrids: no keep_tokens, learned_positions) are read, with version 2's checksum") {
        fs::copy_file(file, edited, fs::copy_options::overwrite_existing);
        with_file(edited, [](H5::H5File& f) {
            set_int(f, "format_version", 2);
            f.removeAttr("keep_tokens");
            f.removeAttr("learned_positions");
        });
        std::string message;  // version 2's checksum leaves out keep_tokens and learned_positions: the recorded one differs
        try {
            (void)icl::read_iclaa_adapter(edited);
        } catch (const InputError& error) {
            message = error.what();
        }
        const auto at = message.find("(they give ");
        REQUIRE(at != std::string::npos);
        const std::string v2_checksum = message.substr(at + 11, message.find(')', at) - at - 11);
        with_file(edited, [&](H5::H5File& f) { set_string(f, "content_checksum", v2_checksum); });
        const icl::IclaaAdapter v2 = icl::read_iclaa_adapter(edited);
        CHECK(v2.keep_tokens == 0);
        CHECK_FALSE(v2.learned_positions);
        CHECK(v2.terms[1][0].b_kv == made.adapter.terms[1][0].b_kv);
        CHECK(v2.terms[1][0].cache_length == 0);
        with_file(edited, [](H5::H5File& f) { set_int(f, "format_version", 3); });  // the same file as version 3 lacks keep_tokens
        require_refused([&] { (void)icl::read_iclaa_adapter(edited); }, {"keep_tokens", "missing"});
    }
}

TEST_CASE("an ICLAA adapter's prompt is checked against the model's vocabulary", "[integrity][iclaa]") {
    IclaaCase made("prf");
    made.adapter.prompt[2] = 11;  // V = 11
    require_refused([&] { icl::check_iclaa_adapter(made.net, made.adapter, "a.h5"); }, {"/prompt_tokens[2] = 11", "vocabulary"});
}

TEST_CASE("an ICLCA adapter with non-finite biases, an edited model_layers or no prompt is refused naming the field", "[integrity][adapter]") {
    Scratch scratch;
    model::Transformer<double> net{tiny_spec(model::ModelSpec::Attention::linear)};
    Rng rng(5);
    net.init(rng);
    const std::vector<std::int32_t> prompt = {1, 4, 2, 9, 1};
    const icl::AttentionBiases<double> biases = icl::iclca_convert(net, prompt.data(), prompt.size());
    icl::Adapter adapter = icl::make_adapter(net, biases, prompt, "", {});
    const fs::path file = scratch.path / "a.h5";
    icl::write_adapter_file(file, adapter);
    REQUIRE(icl::read_adapter_file(file).fingerprint() == adapter.fingerprint());
    const auto refused_after = [&](const std::function<void(H5::H5File&)>& edit, const std::vector<std::string>& parts) {
        const fs::path edited = scratch.path / "e.h5";
        fs::copy_file(file, edited, fs::copy_options::overwrite_existing);
        with_file(edited, edit);
        require_refused([&] { (void)icl::read_adapter_file(edited); }, parts);
    };
    refused_after([](H5::H5File& f) { set_int(f, "model_layers", 3); }, {"model_layers = 3"});
    refused_after([](H5::H5File& f) { set_int(f, "model_layers", 1); }, {"model_layers = 1"});
    refused_after([](H5::H5File& f) { f.unlink("/prompt_tokens"); }, {"/prompt_tokens", "missing"});
    refused_after([](H5::H5File& f) { set_int(f, "prompt_length", 9); }, {"prompt_length"});
    refused_after([](H5::H5File& f) { f.removeAttr("adapter_fingerprint"); }, {"adapter_fingerprint", "missing"});

    SECTION("a NaN written with a matching fingerprint (no checksum can catch it) is refused as not finite") {
        adapter.biases.b_kv[1][3] = std::nan("");
        icl::write_adapter_file(scratch.path / "nan.h5", adapter);
        require_refused([&] { (void)icl::read_adapter_file(scratch.path / "nan.h5"); }, {"blocks.1.attn.b_kv", "index 3", "finite"});
    }
    SECTION("a prompt token outside the vocabulary is refused when applied") {
        adapter.prompt[1] = 40;  // V = 11
        icl::write_adapter_file(scratch.path / "token.h5", adapter);
        const icl::Adapter read = icl::read_adapter_file(scratch.path / "token.h5");
        require_refused([&] { icl::apply_adapter(net, read, {}, "token.h5"); }, {"/prompt_tokens[1] = 40", "vocabulary"});
    }
}

TEST_CASE("read_table refuses columns of different lengths, missing or repeated columns and a bad column_order", "[integrity][results]") {
    Scratch scratch;
    const fs::path file = scratch.path / "t.h5";
    {
        io::ResultsWriter writer(file);
        writer.write_columns("/tables/final", {{"kind", std::vector<std::string>{"a", "b", "c"}},
                                               {"loss", std::vector<double>{0.5, 1.5, 2.5}},
                                               {"count", std::vector<std::int64_t>{1, 2, 3}}});
        writer.commit();
    }
    {
        const io::ResultsReader reader(file);
        const io::Table table = reader.read_table("/tables/final");
        CHECK(table.rows == 3);
        CHECK(table.numbers("count") == std::vector<double>{1, 2, 3});
        CHECK(table.strings("kind")[2] == "c");
        CHECK_THROWS_AS(table.numbers("kind"), InputError);
        CHECK_THROWS_AS(table.column("absent"), InputError);
    }
    const auto refused_after = [&](const std::function<void(H5::H5File&)>& edit, const std::vector<std::string>& parts) {
        const fs::path edited = scratch.path / "e.h5";
        fs::copy_file(file, edited, fs::copy_options::overwrite_existing);
        with_file(edited, edit);
        const io::ResultsReader reader(edited);
        require_refused([&] { (void)reader.read_table("/tables/final"); }, parts);
    };
    const auto set_order = [](H5::H5File& f, const std::string& order) {
        H5::Group group = f.openGroup("/tables/final");
        group.removeAttr("column_order");
        const H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
        const char* text = order.c_str();
        group.createAttribute("column_order", type, H5::DataSpace(H5S_SCALAR)).write(type, &text);
    };
    // A shorter column: what show and collect printed as heap garbage (4.0e-322) with exit status 0.
    refused_after(
        [](H5::H5File& f) {
            f.unlink("/tables/final/loss");
            const hsize_t two = 2;
            const double values[2] = {0.5, 1.5};
            f.createDataSet("/tables/final/loss", H5::PredType::IEEE_F64LE, H5::DataSpace(1, &two)).write(values, H5::PredType::NATIVE_DOUBLE);
        },
        {"column loss has 2 rows", "column kind has 3"});
    refused_after([&](H5::H5File& f) { set_order(f, "kind,loss,missing"); }, {"no column missing"});
    refused_after([&](H5::H5File& f) { set_order(f, "kind,loss,kind"); }, {"kind twice"});
    refused_after([&](H5::H5File& f) { set_order(f, ""); }, {"empty column_order"});
    refused_after([&](H5::H5File& f) { set_order(f, "kind,,loss"); }, {"bad column name"});
    refused_after([](H5::H5File& f) { f.openGroup("/tables/final").removeAttr("column_order"); }, {"not a table"});
}

}  // namespace iclab_test_integrity
