// iclab.Model's engine: a finished run's model loaded once and kept, with adapters applied as `iclab predict
// --adapter` applies them, and logits computed by the same forward as `iclab predict` (tests/python/: bit for bit).
// Loading and adapters go through the CLI's functions (experiments/cli/predict.hpp, lm_input.hpp); the messages of a
// refusal are theirs, with "iclab predict" as the caller.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "experiments/cli/finite_check.hpp"
#include "experiments/cli/lm_estimates.hpp"
#include "experiments/cli/lm_input.hpp"
#include "experiments/cli/predict.hpp"
#include "experiments/registry.hpp"
#include "framework/core/check.hpp"
#include "framework/core/threads.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/lm_run.hpp"
#include "python/src/call.hpp"

namespace iclab::python {

namespace fs = std::filesystem;

namespace {

const std::string kWho = "iclab predict";

// One model in one scalar type: an induction-head run (always float64, as `iclab predict`) or an lm run.
template <class T>
struct Loaded {
    std::unique_ptr<run::InductionRun> induction;  // induction-head runs (T = double)
    std::unique_ptr<cli::InductionAdapters> induction_adapters;
    std::size_t positions = 0;                     // the RoPE table the induction model was loaded for
    std::unique_ptr<run::LmRun<T>> lm;             // lm runs
    std::unique_ptr<cli::LmAdapters> lm_adapters;
    model::Transformer<T>& model() {
        if constexpr (std::is_same_v<T, double>)
            if (!lm) return *induction->model;
        return *lm->model;
    }
};

}  // namespace

class Model {
public:
    Model(const fs::path& run_dir, const std::vector<fs::path>& adapters, const std::string& dtype, int threads)
        : run_dir_(run_dir), adapters_(adapters) {
        ICLAB_INPUT_CHECK(dtype.empty() || dtype == "float64" || dtype == "float32",
                          "iclab predict: --dtype must be float64 or float32, got '" << dtype << "'");
        without_gil([&] {
            configure_threads(threads);
            const config::Config cfg = run::load_finished_run_config(run_dir_, experiments::catalog(), kWho);
            lm_ = cfg.has("task.vocab_size");
            if (!lm_) {
                // as predict(): an induction-head run predicts in float64
                ICLAB_INPUT_CHECK(dtype.empty() || dtype == "float64",
                                  "iclab predict: an induction-head run predicts in float64; --dtype " << dtype
                                                                                               << " is for language-model (lm) runs");
                dtype_ = "float64";
                load_induction(0);
                return;
            }
            // as predict_lm(): adapters hold float64 biases, so the model runs in float64 with them
            ICLAB_INPUT_CHECK(adapters_.empty() || dtype != "float32",
                              "iclab predict: with --adapter the model runs in float64 (the adapters' biases are float64): drop --dtype float32");
            const bool in_float64 = !adapters_.empty() || dtype == "float64" || (dtype.empty() && cfg.get_string("model.dtype") == "float64");
            dtype_ = in_float64 ? "float64" : "float32";
            cli::check_lm_parameters_fit(run_dir_, in_float64 ? 8.0 : 4.0, kWho);
            if (in_float64) load_lm(f64_);
            else load_lm(f32_);
        });
    }

    bool is_lm() const { return lm_; }
    const std::string& dtype() const { return dtype_; }
    std::size_t vocab() const { return lm_ ? spec().vocab : static_cast<std::size_t>(tasks::kInductionVocab); }
    // The longest input: lm runs their learned positions (behind an adapter's prompt); induction runs have none (RoPE).
    std::size_t context() const {
        if (!lm_) return 0;
        const std::size_t start = dtype_ == "float64" ? f64_.lm_adapters->input_position_start() : 0;
        return spec().max_seq_len - start;
    }
    std::size_t parameter_count() const { return dtype_ == "float64" ? f64_model().parameter_count() : f32_.lm->model->parameter_count(); }
    const fs::path& run_dir() const { return run_dir_; }
    const std::vector<fs::path>& adapters() const { return adapters_; }

    // tokens (T) or (B, T), int32 (read in place when C-contiguous int32; converted otherwise) -> logits (T, V) or
    // (B, T, V) in the model's dtype, copied out of the model's activations (the next call overwrites them).
    py::array logits(py::array_t<std::int32_t, py::array::c_style | py::array::forcecast> tokens) {
        ICLAB_INPUT_CHECK(tokens.ndim() == 1 || tokens.ndim() == 2,
                          "iclab.Model.logits: tokens must be (T) or (B, T) token ids, got " << tokens.ndim() << " dimensions");
        const std::size_t B = tokens.ndim() == 2 ? static_cast<std::size_t>(tokens.shape(0)) : 1;
        const std::size_t T = static_cast<std::size_t>(tokens.shape(tokens.ndim() - 1));
        ICLAB_INPUT_CHECK(B > 0 && T > 0, "iclab predict: --tokens is empty");
        const std::int32_t* ids = tokens.data();
        std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(T), static_cast<py::ssize_t>(vocab())};
        if (tokens.ndim() == 2) shape.insert(shape.begin(), static_cast<py::ssize_t>(B));
        if (dtype_ == "float64") {
            py::array_t<double> out(shape);
            forward(f64_, ids, B, T, out.mutable_data());
            return std::move(out);
        }
        py::array_t<float> out(shape);
        forward(f32_, ids, B, T, out.mutable_data());
        return std::move(out);
    }

    // Seconds of each of `iters` bare C++ forwards of `tokens` (T), timed inside C++: the baseline that
    // scripts/bench/python_overhead.py compares Model.logits with (docs/python.md, "Cost").
    std::vector<double> time_forward(py::array_t<std::int32_t, py::array::c_style | py::array::forcecast> tokens, int iters) {
        const std::size_t T = static_cast<std::size_t>(tokens.size());
        const std::int32_t* ids = tokens.data();
        std::vector<double> seconds;
        std::lock_guard<std::mutex> lock(mutex_);
        without_gil([&] {
            const auto run = [&](auto& loaded) {
                auto& model = loaded.model();
                model.trace_non_finite(true);
                for (int i = 0; i < iters; ++i) {
                    const auto start = std::chrono::steady_clock::now();
                    model.forward(ids, 1, T);
                    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
                }
            };
            if (dtype_ == "float64") run(f64_);
            else run(f32_);
        });
        return seconds;
    }

private:
    const model::ModelSpec& spec() const { return dtype_ == "float64" ? f64_model().spec() : f32_.lm->model->spec(); }
    const model::Transformer<double>& f64_model() const { return f64_.lm ? *f64_.lm->model : *f64_.induction->model; }

    // As predict(): the RoPE table covers max(T, task.seq_len) positions; a longer input loads the run again.
    void load_induction(std::size_t positions) {
        f64_.induction_adapters.reset();  // the model points into them
        f64_.induction = std::make_unique<run::InductionRun>(run::load_induction_run(run_dir_, experiments::catalog(), positions, kWho));
        f64_.positions = f64_.induction->model->spec().max_seq_len;
        f64_.induction_adapters = std::make_unique<cli::InductionAdapters>();
        cli::apply_induction_adapters(*f64_.induction_adapters, *f64_.induction->model, adapters_, 1, kWho);
    }

    // As predict_lm_typed().
    template <class T>
    void load_lm(Loaded<T>& loaded) {
        loaded.lm = std::make_unique<run::LmRun<T>>(run::load_lm_run<T>(run_dir_, experiments::catalog(), kWho));
        loaded.lm_adapters = std::make_unique<cli::LmAdapters>();
        model::Transformer<T>& model = *loaded.lm->model;
        if constexpr (std::is_same_v<T, double>) {
            cli::apply_lm_adapters(*loaded.lm_adapters, model, adapters_, kWho);
            model.set_softmax_prompt(loaded.lm_adapters->softmax_terms());
            model.set_learned_position_start(loaded.lm_adapters->input_position_start());
        }
    }

    template <class T>
    void forward(Loaded<T>& loaded, const std::int32_t* ids, std::size_t B, std::size_t T_, T* out) {
        const std::size_t V = vocab();
        // the checks of predict / predict_lm, on every row
        if (lm_) {
            for (std::size_t b = 0; b < B; ++b)
                cli::lm_input_tokens(run_dir_, nullptr, std::vector<int>(ids + b * T_, ids + (b + 1) * T_), V, 0, kWho, "--tokens");
            run::check_fits_context(T_, spec(), kWho);
            // as predict_lm: the memory and work of one sequence of T tokens (a batch of B needs about B times it)
            cli::PredictOptions options;
            options.run_dir = run_dir_;
            options.adapters = adapters_;
            cli::check_predict_lm_estimate(options, spec(), sizeof(T), T_);
            const std::size_t start = loaded.lm_adapters->input_position_start();
            ICLAB_INPUT_CHECK(start + T_ <= spec().max_seq_len,
                              "iclab predict: " << T_ << " input tokens behind the adapter's " << start
                                                << "-token prompt do not fit the model's context of " << spec().max_seq_len
                                                << " learned positions; give at most " << spec().max_seq_len - start);
        } else {
            for (std::size_t i = 0; i < B * T_; ++i)
                ICLAB_INPUT_CHECK(ids[i] >= 0 && ids[i] < tasks::kInductionVocab,
                                  "iclab predict: token " << ids[i] << " at position " << i % T_ << " is outside the vocabulary of "
                                                          << tasks::kInductionVocab << " letters (a-z = 0-25, A-Z = 26-51)");
        }
        std::lock_guard<std::mutex> lock(mutex_);  // one forward at a time: the model's activations are shared
        without_gil([&] {
            if constexpr (std::is_same_v<T, double>)
                if (!lm_ && T_ > loaded.positions) load_induction(T_);
            model::Transformer<T>& model = loaded.model();
            if (!lm_ && loaded.induction_adapters->has_iclaa)  // as apply_induction_adapters checks it
                ICLAB_INPUT_CHECK(loaded.induction_adapters->iclaa.input_position_start() + T_ <= model.spec().max_seq_len,
                                  "iclab predict: " << T_ << " input tokens behind the adapter's "
                                                    << loaded.induction_adapters->iclaa.input_position_start()
                                                    << "-token prompt do not fit the model's context of " << model.spec().max_seq_len
                                                    << " learned positions");
            model.trace_non_finite(true);  // NaN or infinite logits are refused, never returned (finite_check.hpp)
            model.forward(ids, B, T_);
            if (model.first_non_finite().found())
                cli::refuse_non_finite(model, ids, B * T_, kWho, std::to_string(B * T_) + " input tokens",
                                       lm_ ? "run predict with --dtype float64" : "the model's parameters are too large for this input");
            std::memcpy(out, model.logits(), B * T_ * V * sizeof(T));
        });
    }

    fs::path run_dir_;
    std::vector<fs::path> adapters_;
    bool lm_ = false;
    std::string dtype_;
    Loaded<double> f64_;
    Loaded<float> f32_;
    std::mutex mutex_;
};

void bind_model(py::module_& m) {
    py::class_<Model>(m, "Model")
        .def(py::init<const fs::path&, const std::vector<fs::path>&, const std::string&, int>(), py::arg("run_dir"),
             py::arg("adapters") = std::vector<fs::path>{}, py::arg("dtype") = "", py::arg("threads") = 0)
        .def("logits", &Model::logits, py::arg("tokens"))
        .def("time_forward", &Model::time_forward, py::arg("tokens"), py::arg("iters"))
        .def_property_readonly("is_lm", &Model::is_lm)
        .def_property_readonly("dtype", &Model::dtype)
        .def_property_readonly("vocab", &Model::vocab)
        .def_property_readonly("context", &Model::context)
        .def_property_readonly("parameter_count", &Model::parameter_count)
        .def_property_readonly("run_dir", &Model::run_dir)
        .def_property_readonly("adapters", &Model::adapters);
}

}  // namespace iclab::python
