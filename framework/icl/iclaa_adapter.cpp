#include "framework/icl/iclaa_adapter.hpp"

#include "framework/core/check.hpp"
#include "framework/icl/iclca.hpp"

// ICLAA conversion and the model check; the file's writer and reader are in iclaa_adapter_io.cpp.
namespace iclab::icl {

IclaaAdapter iclaa_convert(model::Transformer<double>& model, const std::vector<std::int32_t>& prompt, std::string prompt_text,
                           LayerHeadMaps maps, const std::string& feature_map, std::uint64_t seed, RopeConvention convention,
                           std::size_t keep_recent) {
    const model::ModelSpec& spec = model.spec();
    check_iclaa_assumptions(spec);
    ICLAB_INPUT_CHECK(!prompt.empty(), "the ICL prompt is empty");
    ICLAB_INPUT_CHECK(keep_recent <= prompt.size(),
                      "--keep-tokens " << keep_recent << " must lie in [1, " << prompt.size() << "] (the prompt's tokens)");
    ICLAB_CHECK(maps.size() == spec.layers && !maps[0].empty(), "feature maps for " << maps.size() << " layers, the model has " << spec.layers);
    IclaaAdapter adapter;
    adapter.feature_map = feature_map;
    adapter.features = maps[0][0].features;
    adapter.seed = seed;
    adapter.convention = convention;
    adapter.keep_tokens = keep_recent;
    adapter.learned_positions = spec.positions == model::ModelSpec::Positions::learned;
    adapter.maps = std::move(maps);
    adapter.prompt = prompt;
    adapter.prompt_text = std::move(prompt_text);
    adapter.model_fingerprint = model_fingerprint(model);
    adapter.layers = spec.layers;
    adapter.heads = spec.heads;
    adapter.head_dim = spec.head_dim();
    const PromptKeysValues kv = capture_prompt_keys_values(model, prompt.data(), 1, prompt.size());
    adapter.terms = empty_prompt_terms(spec.layers, spec.heads);
    // the hybrid's two parts exactly as experiment iclaa_lm's hybrid rows add them (iclaa_lm_eval.cpp add_row_terms)
    if (keep_recent > 0) add_cache_terms(adapter.terms, 0, kv, 0, CacheSelection::recent, keep_recent, model.rope());
    add_kernel_terms(adapter.terms, 0, kv, 0, adapter.maps, model.rope(), convention, keep_recent);
    adapter.point_terms_at_maps();
    return adapter;
}

void check_iclaa_adapter(const model::Transformer<double>& model, const IclaaAdapter& adapter, const std::string& name) {
    try {
        check_iclaa_assumptions(model.spec());
    } catch (const InputError& error) {
        throw InputError(name + " is an ICLAA adapter, which needs a softmax model: " + error.what());
    }
    ICLAB_INPUT_CHECK(adapter.model_fingerprint == model_fingerprint(model),
                      name << " was made for the model with fingerprint " << adapter.model_fingerprint << ", this model's is "
                           << model_fingerprint(model));
    ICLAB_INPUT_CHECK(adapter.layers == model.spec().layers && adapter.heads == model.spec().heads &&
                          adapter.head_dim == model.spec().head_dim(),
                      name << " has the shapes of another model");
    ICLAB_INPUT_CHECK(adapter.learned_positions == (model.spec().positions == model::ModelSpec::Positions::learned),
                      name << ": attribute learned_positions = " << adapter.learned_positions << " does not match the model");
    ICLAB_INPUT_CHECK(adapter.input_position_start() < model.spec().max_seq_len,
                      name << ": its prompt of " << adapter.prompt.size() << " tokens fills the model's context of " << model.spec().max_seq_len);
    const std::size_t V = model.spec().vocab;
    for (std::size_t i = 0; i < adapter.prompt.size(); ++i)
        ICLAB_INPUT_CHECK(adapter.prompt[i] >= 0 && static_cast<std::size_t>(adapter.prompt[i]) < V,
                          name << ": /prompt_tokens[" << i << "] = " << adapter.prompt[i] << " is outside the model's vocabulary (V = " << V << ")");
}

}  // namespace iclab::icl
