#include "experiments/iclaa/iclaa_stages.hpp"

#include <cmath>
#include <cstdio>

namespace iclab::experiments::iclaa_detail {

namespace {

std::string layer_path(std::size_t l, const char* name) { return "/maps/layer_" + std::to_string(l) + "/" + name; }

bool all_finite(const std::vector<double>& values) {
    for (const double v : values)
        if (!std::isfinite(v)) return false;
    return true;
}

}  // namespace

std::string fit_unit_name(std::size_t features, std::size_t fit_seed) {
    return "learned_fit_f" + std::to_string(features) + "_seed" + std::to_string(fit_seed);
}

std::string chunk_unit_name(const std::string& pair_set, std::size_t first) {
    char digits[16];
    std::snprintf(digits, sizeof digits, "%08zu", first);
    return pair_set + "_pairs_" + digits;
}

void save_fit(run::StageStore& store, std::size_t features, std::size_t fit_seed, const icl::LayerHeadMaps& maps,
              const icl::FeatureFitReport& report) {
    const auto unit = store.open(fit_unit_name(features, fit_seed));
    const std::size_t L = maps.size(), H = maps.front().size(), D = maps.front().front().dim;
    unit->set_attr("features", features);
    unit->set_attr("fit_seed", fit_seed);
    unit->set_attr("fit_seconds", report.seconds);
    std::vector<double> scale, lambda, first, final_loss;
    for (std::size_t l = 0; l < L; ++l) {
        std::vector<double> w, c;
        for (std::size_t h = 0; h < H; ++h) {
            const nn::KernelFeatures<double>& map = maps[l][h];
            ICLAB_CHECK(map.kind == nn::KernelMapKind::exp_linear && map.features == features && map.dim == D &&
                            map.w.size() == D * features && map.c.size() == features,
                        "a learned map is not an exp_linear map of F = " << features);
            w.insert(w.end(), map.w.begin(), map.w.end());
            c.insert(c.end(), map.c.begin(), map.c.end());
            scale.push_back(map.input_scale);
            lambda.push_back(map.lambda);
            first.push_back(report.first_loss[l][h]);
            final_loss.push_back(report.final_loss[l][h]);
        }
        unit->write_tensor(layer_path(l, "w"), w.data(), {H, D, features}, {{"layout", "(H, D, F): column r of head h is w_r"}});
        unit->write_tensor(layer_path(l, "c"), c.data(), {H, features});
    }
    unit->write_tensor("/maps/input_scale", scale.data(), {L, H});
    unit->write_tensor("/maps/lambda", lambda.data(), {L, H});
    unit->write_tensor("/report/first_loss", first.data(), {L, H});
    unit->write_tensor("/report/final_loss", final_loss.data(), {L, H});
    store.save(*unit);
}

bool load_fit(run::StageStore& store, std::size_t features, std::size_t fit_seed, const model::ModelSpec& spec, icl::LayerHeadMaps& maps,
              icl::FeatureFitReport& report) {
    const std::string name = fit_unit_name(features, fit_seed);
    const auto unit = store.load(name);
    if (!unit) return false;
    const std::size_t L = spec.layers, H = spec.heads, D = spec.head_dim(), F = features;
    try {
        const auto tensor = [&](const std::string& path, const std::vector<std::size_t>& shape) {
            ICLAB_INPUT_CHECK(unit->has(path), "no dataset " << path);
            auto t = unit->read_tensor_double(path);
            ICLAB_INPUT_CHECK(t.shape == shape, path << " has another shape than the model's layers, heads, head width and F");
            ICLAB_INPUT_CHECK(all_finite(t.values), path << " holds a value that is not finite");
            return t.values;
        };
        ICLAB_INPUT_CHECK(unit->read_attr_int64("/", "features") == static_cast<std::int64_t>(F) &&
                              unit->read_attr_int64("/", "fit_seed") == static_cast<std::int64_t>(fit_seed),
                          "attributes features / fit_seed are not F = " << F << ", fit seed " << fit_seed);
        const std::vector<double> scale = tensor("/maps/input_scale", {L, H}), lambda = tensor("/maps/lambda", {L, H});
        const std::vector<double> first = tensor("/report/first_loss", {L, H}), final_loss = tensor("/report/final_loss", {L, H});
        icl::LayerHeadMaps loaded(L);
        report = {};
        report.first_loss.assign(L, std::vector<double>(H));
        report.final_loss.assign(L, std::vector<double>(H));
        for (std::size_t l = 0; l < L; ++l) {
            const std::vector<double> w = tensor(layer_path(l, "w"), {H, D, F}), c = tensor(layer_path(l, "c"), {H, F});
            for (std::size_t h = 0; h < H; ++h) {
                nn::KernelFeatures<double> map;
                map.kind = nn::KernelMapKind::exp_linear;
                map.dim = D;
                map.features = F;
                map.input_scale = scale[l * H + h];
                map.lambda = lambda[l * H + h];
                map.w.assign(w.begin() + static_cast<std::ptrdiff_t>(h * D * F), w.begin() + static_cast<std::ptrdiff_t>((h + 1) * D * F));
                map.c.assign(c.begin() + static_cast<std::ptrdiff_t>(h * F), c.begin() + static_cast<std::ptrdiff_t>((h + 1) * F));
                loaded[l].push_back(std::move(map));
                report.first_loss[l][h] = first[l * H + h];
                report.final_loss[l][h] = final_loss[l * H + h];
            }
        }
        report.seconds = unit->read_attr_double("/", "fit_seconds");
        maps = std::move(loaded);
    } catch (const Error& error) {
        store.reject(name, error.what());
        return false;
    }
    return true;
}

void save_chunk(run::StageStore& store, const std::string& name, const std::vector<Row>& rows, const ChunkScores& chunk) {
    const auto unit = store.open(name);
    ICLAB_CHECK(chunk.rows.size() == rows.size() && chunk.conversion_seconds.size() == rows.size(), "a chunk scores every row");
    const std::size_t B = chunk.rows.front().size();
    unit->set_attr("pairs", B);
    unit->set_attr("seconds", chunk.seconds);
    std::vector<std::string> labels;
    for (const Row& row : rows) labels.push_back(row.label);
    unit->write_columns("/rows", {{"label", labels}, {"conversion_seconds", chunk.conversion_seconds}});
    std::vector<std::int64_t> row_index, top1, scored, correct, repeats, repeat_correct;
    std::vector<double> relative_error, kl;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        ICLAB_CHECK(chunk.rows[r].size() == B, "row " << rows[r].label << " scored another number of pairs");
        for (const PairScore& p : chunk.rows[r]) {
            row_index.push_back(static_cast<std::int64_t>(r));
            relative_error.push_back(p.relative_error);
            kl.push_back(p.kl);
            top1.push_back(p.top1);
            scored.push_back(p.scored);
            correct.push_back(p.correct);
            repeats.push_back(p.repeats);
            repeat_correct.push_back(p.repeat_correct);
        }
    }
    unit->write_columns("/scores", {{"row", row_index},
                                    {"relative_error", relative_error},
                                    {"kl", kl},
                                    {"top1", top1},
                                    {"scored", scored},
                                    {"correct", correct},
                                    {"repeats", repeats},
                                    {"repeat_correct", repeat_correct}});
    if (!chunk.share.empty()) {
        const std::size_t K = chunk.share.front().size();
        std::vector<double> share, norm;
        for (std::size_t i = 0; i < chunk.share.size(); ++i) {
            ICLAB_CHECK(chunk.share[i].size() == K && chunk.norm[i].size() == K, "diagnostics of one chunk differ in length");
            share.insert(share.end(), chunk.share[i].begin(), chunk.share[i].end());
            norm.insert(norm.end(), chunk.norm[i].begin(), chunk.norm[i].end());
        }
        unit->write_tensor("/diagnostics/share", share.data(), {chunk.share.size(), K});
        unit->write_tensor("/diagnostics/norm", norm.data(), {chunk.share.size(), K});
    }
    store.save(*unit);
}

bool load_chunk(run::StageStore& store, const std::string& name, const std::vector<Row>& rows, std::size_t pairs, std::size_t layer_heads,
                ChunkScores& chunk) {
    const auto unit = store.load(name);
    if (!unit) return false;
    try {
        ICLAB_INPUT_CHECK(unit->read_attr_int64("/", "pairs") == static_cast<std::int64_t>(pairs), "it scored another number of pairs");
        const io::Table row_table = unit->read_table("/rows");
        ICLAB_INPUT_CHECK(row_table.rows == rows.size(), "it scored " << row_table.rows << " rows, this run has " << rows.size());
        const std::vector<std::string>& labels = row_table.strings("label");
        for (std::size_t r = 0; r < rows.size(); ++r)
            ICLAB_INPUT_CHECK(labels[r] == rows[r].label, "its row " << r << " is '" << labels[r] << "', this run's is '" << rows[r].label << "'");
        const io::Table scores = unit->read_table("/scores");
        ICLAB_INPUT_CHECK(scores.rows == rows.size() * pairs, "/scores has " << scores.rows << " rows, not rows x pairs");
        const std::vector<std::int64_t>& row_index = scores.integers("row");
        const std::vector<double> relative_error = scores.numbers("relative_error"), kl = scores.numbers("kl");
        const std::vector<std::int64_t>&top1 = scores.integers("top1"), &scored = scores.integers("scored"), &correct = scores.integers("correct"),
                                     &repeats = scores.integers("repeats"), &repeat_correct = scores.integers("repeat_correct");
        ChunkScores loaded;
        loaded.rows.assign(rows.size(), {});
        loaded.conversion_seconds = row_table.numbers("conversion_seconds");
        for (std::size_t i = 0; i < scores.rows; ++i) {
            ICLAB_INPUT_CHECK(row_index[i] == static_cast<std::int64_t>(i / pairs), "/scores/row is not in row order");
            loaded.rows[i / pairs].push_back({relative_error[i], kl[i], top1[i], scored[i], correct[i], repeats[i], repeat_correct[i]});
        }
        ICLAB_INPUT_CHECK(unit->has("/diagnostics/share") == (layer_heads > 0), "its diagnostics are not this pair set's");
        if (layer_heads > 0) {
            const auto share = unit->read_tensor_double("/diagnostics/share"), norm = unit->read_tensor_double("/diagnostics/norm");
            ICLAB_INPUT_CHECK(share.shape.size() == 2 && share.shape[0] == layer_heads && norm.shape == share.shape,
                              "its diagnostics are not (layer-heads, queries) of this model");
            const std::size_t K = share.shape[1];
            for (std::size_t i = 0; i < layer_heads; ++i) {
                loaded.share.emplace_back(share.values.begin() + static_cast<std::ptrdiff_t>(i * K), share.values.begin() + static_cast<std::ptrdiff_t>((i + 1) * K));
                loaded.norm.emplace_back(norm.values.begin() + static_cast<std::ptrdiff_t>(i * K), norm.values.begin() + static_cast<std::ptrdiff_t>((i + 1) * K));
            }
        }
        loaded.seconds = unit->read_attr_double("/", "seconds");
        chunk = std::move(loaded);
    } catch (const Error& error) {
        store.reject(name, error.what());
        return false;
    }
    return true;
}

}  // namespace iclab::experiments::iclaa_detail
