#include "framework/run/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "framework/core/check.hpp"
#include "framework/core/hash.hpp"
#include "framework/io/provenance.hpp"
#include "framework/core/interrupt.hpp"
#include "framework/checkpoint/checkpoint_io.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/train/perturb.hpp"

namespace iclab::run {

namespace {

// Version of checkpoint.h5's layout (docs/checkpoint_format.md); a reader refuses other versions.
constexpr std::int64_t kCheckpointFormat = 1;

std::string format_metric(const std::string& name, double value, int precision = 4) {
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, "%s %.*f", name.c_str(), precision, value);
    return buffer;
}

// The /curves columns around the task's metrics.
const std::vector<std::string> kCurvesBefore = {"step", "train_loss"};
const std::vector<std::string> kCurvesAfter = {"lr", "grad_norm", "tokens_per_s", "elapsed_s"};

// "NaN", "+Inf" or "-Inf" (printf would say "-nan" for some NaNs), else the number.
std::string describe_value(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    std::ostringstream text;
    text << value;
    return text.str();
}

}  // namespace

TrainerSettings trainer_settings_from_config(const config::Config& cfg) {
    TrainerSettings settings;
    settings.steps = static_cast<std::size_t>(cfg.get_int("train.steps"));
    settings.optimizer = optimizer_spec_from_config(cfg);
    settings.schedule = schedule_spec_from_config(cfg);
    settings.grad_clip = cfg.get_float("train.grad_clip");
    settings.eval_every = static_cast<std::size_t>(cfg.get_int("eval.every"));
    settings.checkpoint_every = static_cast<std::size_t>(cfg.get_int("train.checkpoint_every"));
    settings.log_every = static_cast<std::size_t>(cfg.get_int("log.every"));
    settings.perturb_init_ulps = cfg.get_int("train.perturb_init_ulps");
    settings.seed = static_cast<std::uint64_t>(cfg.get_int("seed"));
    return settings;
}

template <class T>
Trainer<T>::Trainer(const TrainerSettings& settings, const model::ParameterLayout& layout, std::vector<T>& params,
                    std::vector<T>& grads, TrainingTask task, RunFolder& run, const RunOptions& options)
    : settings_(settings), layout_(layout), params_(params), grads_(grads), task_(std::move(task)), run_(run),
      options_(options), optimizer_(settings.optimizer, layout) {
    ICLAB_CHECK(task_.train_step && task_.evaluate, "a TrainingTask needs train_step and evaluate");
    ICLAB_CHECK(params_.size() == layout_.total() && grads_.size() == layout_.total(), "parameter buffers do not match the layout");
    ICLAB_CHECK(settings_.steps > 0 && settings_.eval_every > 0, "trainer settings: steps and eval_every must be positive");
}

template <class T>
double Trainer<T>::elapsed_seconds() const {
    return elapsed_before_ + (progress_ ? progress_->elapsed_seconds() : 0.0);
}

template <class T>
bool Trainer<T>::train(Rng data_rng) {
    data_rng_ = data_rng;
    if (run_.resumed())
        load_checkpoint();  // its parameters were perturbed (if at all) before its first step
    else
        train::perturb_parameters_by_ulps(params_, layout_, settings_.perturb_init_ulps, settings_.seed);
    const std::size_t steps = settings_.steps;
    const std::size_t stop = options_.stop_after > 0 ? std::min(options_.stop_after, steps) : steps;
    ICLAB_INPUT_CHECK(stop > next_step_ || stop == steps, "--stop-after " << options_.stop_after << " is not after the checkpoint's step "
                                                                           << next_step_);
    progress_ = std::make_unique<train::Progress>(steps, options_.quiet, &run_.log(), settings_.log_every, next_step_);
    if (!options_.quiet) {
        if (run_.resumed())
            std::fprintf(stderr, "iclab: resuming %s at step %zu of %zu\n", run_.path().string().c_str(), next_step_, steps);
        else
            std::fprintf(stderr, "iclab: training %zu parameters for %zu steps -> %s\n", layout_.total(), steps,
                         run_.path().string().c_str());
    }

    // SIGINT/SIGTERM/SIGHUP (Ctrl-C, kill, scancel) stop the run after the current step with a checkpoint, as
    // --stop-after does; the command then exits with 128 + the signal and `iclab run --resume` continues it.
    InterruptScope interruptible;
    for (std::size_t step = next_step_; step < stop; ++step) {
        const auto step_start = std::chrono::steady_clock::now();
        const double loss = task_.train_step(data_rng_);
        if (!std::isfinite(loss)) diverged(step + 1, "the loss", loss);
        const double grad_norm = train::clip_gradient_norm(grads_, layout_, settings_.grad_clip);
        if (!std::isfinite(grad_norm)) diverged(step + 1, "the gradient norm", grad_norm);
        const double lr = train::learning_rate(settings_.schedule, step);
        optimizer_.step(params_, grads_, lr);
        interval_train_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
        next_step_ = step + 1;

        step_index_.push_back(static_cast<std::int64_t>(next_step_));
        step_loss_.push_back(loss);
        step_lr_.push_back(lr);
        step_grad_norm_.push_back(grad_norm);
        interval_loss_ += loss;
        interval_grad_norm_ += grad_norm;
        ++interval_steps_;

        if (next_step_ % settings_.eval_every == 0 || next_step_ == steps) {
            last_metrics_ = task_.evaluate();
            append_curve_row(next_step_, lr, elapsed_seconds());
            std::string line = "eval step " + std::to_string(next_step_) + ": " + format_metric("train_loss", curve_columns_[1].back());
            for (const auto& [name, value] : last_metrics_) line += "  " + format_metric(name, value);
            progress_->message(line + "  " + format_metric("tok/s", curve_columns_[curve_columns_.size() - 2].back(), 0));
        }
        std::string status = format_metric("loss", loss);
        if (!task_.progress_metric.empty()) {
            std::string shown = task_.progress_metric + " -";  // before the first evaluation: no value, not 0
            for (const auto& [name, value] : last_metrics_)
                if (name == task_.progress_metric) shown = format_metric(name, value, 3);
            status += "  " + shown;
        }
        // The rate of the steps since the last evaluation, or at an evaluation the rate it recorded.
        const double tokens_per_s = interval_steps_ > 0 && interval_train_seconds_ > 0
                                        ? static_cast<double>(interval_steps_ * task_.tokens_per_step) / interval_train_seconds_
                                        : curve_columns_[curve_columns_.size() - 2].back();
        progress_->update(next_step_, status + "  " + format_metric("tok/s", tokens_per_s, 0));

        const bool periodic = settings_.checkpoint_every > 0 && next_step_ % settings_.checkpoint_every == 0;
        if (periodic || next_step_ == stop || interrupt_requested()) write_checkpoint();
        if (interrupt_requested()) break;
    }
    if (next_step_ < steps) {
        progress_->end_bar();
        run_.log() << "stopped after step " << next_step_ << " of " << steps << " ("
                   << (interrupt_requested() ? std::string(signal_name(interrupt_signal())) : std::string("--stop-after"))
                   << "); checkpoint.h5 holds step " << last_checkpoint_step_ << "\n"
                   << std::flush;
    }
    return next_step_ == steps;
}

template <class T>
void Trainer<T>::append_curve_row(std::size_t step, double lr, double elapsed) {
    // The first evaluation fixes the metric columns (a checkpoint written before it has none).
    if (curve_columns_.empty() || curve_columns_[0].empty()) {
        curve_names_ = kCurvesBefore;
        for (const auto& metric : last_metrics_) curve_names_.push_back(metric.first);
        curve_names_.insert(curve_names_.end(), kCurvesAfter.begin(), kCurvesAfter.end());
        curve_columns_.assign(curve_names_.size(), {});
    }
    ICLAB_CHECK(curve_names_.size() == kCurvesBefore.size() + last_metrics_.size() + kCurvesAfter.size(),
                "the evaluation returned another set of metrics than before");
    std::vector<double> row = {static_cast<double>(step), interval_loss_ / interval_steps_};
    for (std::size_t i = 0; i < last_metrics_.size(); ++i) {
        ICLAB_CHECK(curve_names_[kCurvesBefore.size() + i] == last_metrics_[i].first,
                    "the evaluation returned metric " << last_metrics_[i].first << " where " << curve_names_[kCurvesBefore.size() + i]
                                                      << " was before");
        row.push_back(last_metrics_[i].second);
    }
    row.push_back(lr);
    row.push_back(interval_grad_norm_ / interval_steps_);
    row.push_back(static_cast<double>(interval_steps_ * task_.tokens_per_step) / interval_train_seconds_);
    row.push_back(elapsed);
    for (std::size_t c = 0; c < row.size(); ++c) curve_columns_[c].push_back(row[c]);
    interval_loss_ = interval_grad_norm_ = interval_train_seconds_ = 0.0;
    interval_steps_ = 0;
    write_live_curves(curve_columns_[0].size() == 1);
}

template <class T>
void Trainer<T>::write_live_curves(bool rewrite) const {
    // RUN_DIR/curves.csv: every evaluation row as soon as it exists, for `tail -f` and plots of a running job.
    // results.h5 /curves stays the record; this file is rewritten from the checkpoint's rows on resume.
    const std::filesystem::path path = run_.path() / kLiveCurvesFile;
    std::ofstream out(path, rewrite ? std::ios::trunc : std::ios::app);
    const auto write_row = [&](std::size_t r) {
        for (std::size_t c = 0; c < curve_columns_.size(); ++c) {
            char value[32];
            std::snprintf(value, sizeof value, "%.10g", curve_columns_[c][r]);
            out << (c ? "," : "") << value;
        }
        out << "\n";
    };
    const std::size_t rows = curve_columns_.empty() ? 0 : curve_columns_[0].size();
    if (rewrite) {
        for (std::size_t c = 0; c < curve_names_.size(); ++c) out << (c ? "," : "") << curve_names_[c];
        out << "\n";
        for (std::size_t r = 0; r < rows; ++r) write_row(r);
    } else if (rows > 0) {
        write_row(rows - 1);
    }
    out.flush();  // a reader sees whole rows; a failure here never stops training (results.h5 holds the curves)
}

template <class T>
void Trainer<T>::write_tables(io::ResultsWriter& writer) const {
    std::vector<io::Column> curves;
    if (curve_names_.empty()) {
        for (const auto& name : kCurvesBefore) curves.push_back({name, std::vector<double>{}});
        for (const auto& name : kCurvesAfter) curves.push_back({name, std::vector<double>{}});
    } else {
        for (std::size_t c = 0; c < curve_names_.size(); ++c) curves.push_back({curve_names_[c], curve_columns_[c]});
    }
    writer.write_columns("/curves", curves);
    writer.write_columns("/steps", {{"step", step_index_}, {"loss", step_loss_}, {"lr", step_lr_}, {"grad_norm", step_grad_norm_}});
}

template <class T>
void Trainer<T>::diverged(std::size_t step, const std::string& quantity, double value) {
    std::ostringstream message;
    message << "training diverged at step " << step << ": " << quantity << " is " << describe_value(value)
            << " (try a lower train.lr or a gradient clip, train.grad_clip); ";
    if (last_checkpoint_step_ > 0)
        message << "the last good checkpoint, step " << last_checkpoint_step_ << ", is " << run_.checkpoint_path().string();
    else
        message << "no checkpoint was written";
    run_.log() << message.str() << "\n" << std::flush;
    if (progress_) progress_->end_bar();
    throw Error(message.str());
}

namespace {
// FNV-1a of the scalar trainer state, bit for bit.
std::string state_checksum(std::initializer_list<double> values) {
    Fnv1a64 hash;
    for (double v : values) hash.mix(&v, sizeof v);
    return "fnv1a64:" + hash.hex();
}
}  // namespace

template <class T>
void Trainer<T>::write_checkpoint() {
    // Never checkpoint a bad state: parameters made non-finite by the last update stop the run here.
    for (const auto& entry : layout_.entries())
        for (std::size_t i = 0; i < entry.size; ++i)
            if (!std::isfinite(params_[entry.offset + i]))
                diverged(next_step_, "parameter " + entry.name + "[" + std::to_string(i) + "] after the update",
                         params_[entry.offset + i]);

    const std::unique_ptr<io::ResultsWriter> checkpoint = run_.open_checkpoint();  // the run's identity
    io::ResultsWriter& writer = *checkpoint;
    writer.set_attr("checkpoint_format", kCheckpointFormat);
    static const std::string commit = io::git_commit();
    writer.set_attr("git_commit", commit);
    static const std::string blas_core = io::openblas_core();
    writer.set_attr("blas_core", blas_core);
    writer.set_attr("iclab_version", io::iclab_version());
    writer.set_attr("dtype", dtype_name<T>());

    writer.set_attr("next_step", next_step_);
    writer.set_attr("total_steps", settings_.steps);
    const double elapsed = elapsed_seconds();  // once: the checksum below covers the same value
    writer.set_attr("elapsed_s", elapsed);
    writer.set_attr("interval_loss_sum", interval_loss_);
    writer.set_attr("interval_grad_norm_sum", interval_grad_norm_);
    writer.set_attr("interval_train_seconds", interval_train_seconds_);
    writer.set_attr("interval_steps", interval_steps_);

    write_parameter_tensors(writer, "/checkpoint", layout_, params_);
    writer.set_attr("optimizer", train::optimizer_name(settings_.optimizer.kind));
    writer.set_attr("optimizer_steps_taken", optimizer_.steps_taken());
    write_parameter_tensors(writer, "/optimizer/first_moment", layout_, optimizer_.first_moment());
    if (!optimizer_.second_moment().empty())
        write_parameter_tensors(writer, "/optimizer/second_moment", layout_, optimizer_.second_moment());

    // xoshiro256** words stored bit for bit as int64, plus Box-Muller's spare normal.
    const Rng::State rng = data_rng_.state();
    std::int64_t words[4];
    std::memcpy(words, rng.words.data(), sizeof words);
    writer.write_tensor("/trainer/data_rng/words", words, {4}, {{"layout", "(4): xoshiro256** state, uint64 stored as int64 bits"}});
    writer.set_attr("data_rng_has_spare_normal", static_cast<std::int64_t>(rng.has_spare_normal ? 1 : 0));
    writer.set_attr("data_rng_spare_normal", rng.spare_normal);
    // The scalar resume state lives in attributes, which carry no checksum of their own (tensors and columns do).
    writer.set_attr("trainer_state_checksum",
                    state_checksum({static_cast<double>(next_step_), static_cast<double>(settings_.steps), elapsed,
                                    interval_loss_, interval_grad_norm_, interval_train_seconds_,
                                    static_cast<double>(interval_steps_), static_cast<double>(optimizer_.steps_taken()),
                                    rng.has_spare_normal ? 1.0 : 0.0, rng.spare_normal}));

    write_tables(writer);
    writer.commit();
    last_checkpoint_step_ = next_step_;
    run_.log() << "checkpoint at step " << next_step_ << "\n" << std::flush;
}

template <class T>
void Trainer<T>::load_checkpoint() {
    const io::ResultsReader reader(run_.checkpoint_path());
    const std::string file = reader.path().string();
    ICLAB_INPUT_CHECK(reader.read_attr_int64("/", "checkpoint_format") == kCheckpointFormat,
                      file << " has checkpoint format " << reader.read_attr_int64("/", "checkpoint_format") << "; this iclab reads "
                           << kCheckpointFormat);
    ICLAB_INPUT_CHECK(reader.read_attr_string("/", "dtype") == dtype_name<T>(),
                      file << " holds " << reader.read_attr_string("/", "dtype") << " parameters, the run trains " << dtype_name<T>());
    ICLAB_INPUT_CHECK(static_cast<std::size_t>(reader.read_attr_int64("/", "total_steps")) == settings_.steps,
                      file << " was written for " << reader.read_attr_int64("/", "total_steps") << " steps, the config says "
                           << settings_.steps);
    const std::string commit = reader.read_attr_string("/", "git_commit"), now = io::git_commit();
    if (commit != now) {
        const std::string warning = "warning: the checkpoint was written by iclab at commit " + commit + ", this is " + now +
                                    ": if the numerics changed, the resumed run differs from an uninterrupted one";
        run_.log() << warning << "\n";
        if (!options_.quiet) std::fprintf(stderr, "iclab: %s\n", warning.c_str());
    }
    // OpenBLAS picks its kernel per CPU (Haswell, SkylakeX, Cooperlake...): its results differ in the last bits between
    // kernels, so a run that computes with OpenBLAS (model.small_gemm / large_gemm: openblas) and is resumed on another
    // CPU is not bit-identical to an uninterrupted one (issue 15). iclab's own kernel, the default, does not depend on it.
    if (reader.has_attr("/", "blas_core") && reader.read_attr_string("/", "blas_core") != io::openblas_core()) {
        const std::string warning = "warning: the checkpoint was written with the OpenBLAS kernel " + reader.read_attr_string("/", "blas_core") +
                                    ", this machine uses " + io::openblas_core() +
                                    ": products computed with OpenBLAS (model.small_gemm / large_gemm: openblas) differ in "
                                    "the last bits, and so will the resumed run from an uninterrupted one";
        run_.log() << warning << "\n";
        if (!options_.quiet) std::fprintf(stderr, "iclab: %s\n", warning.c_str());
    }

    next_step_ = static_cast<std::size_t>(reader.read_attr_int64("/", "next_step"));
    ICLAB_INPUT_CHECK(next_step_ <= settings_.steps, file << ": next_step " << next_step_ << " is beyond train.steps");
    last_checkpoint_step_ = next_step_;
    elapsed_before_ = reader.read_attr_double("/", "elapsed_s");
    interval_loss_ = reader.read_attr_double("/", "interval_loss_sum");
    interval_grad_norm_ = reader.read_attr_double("/", "interval_grad_norm_sum");
    interval_train_seconds_ = reader.read_attr_double("/", "interval_train_seconds");
    interval_steps_ = static_cast<std::size_t>(reader.read_attr_int64("/", "interval_steps"));

    read_parameter_tensors(reader, "/checkpoint", layout_, params_);
    ICLAB_INPUT_CHECK(reader.read_attr_string("/", "optimizer") == train::optimizer_name(settings_.optimizer.kind),
                      file << " holds the state of optimizer " << reader.read_attr_string("/", "optimizer"));
    optimizer_.set_steps_taken(static_cast<std::size_t>(reader.read_attr_int64("/", "optimizer_steps_taken")));
    read_parameter_tensors(reader, "/optimizer/first_moment", layout_, optimizer_.first_moment());
    if (!optimizer_.second_moment().empty())
        read_parameter_tensors(reader, "/optimizer/second_moment", layout_, optimizer_.second_moment());

    const std::vector<std::int64_t> words = reader.read_column_int64("/trainer/data_rng/words");
    ICLAB_INPUT_CHECK(words.size() == 4, file << ": /trainer/data_rng/words must hold 4 words");
    Rng::State rng{};
    std::memcpy(rng.words.data(), words.data(), sizeof(std::uint64_t) * 4);
    rng.has_spare_normal = reader.read_attr_int64("/", "data_rng_has_spare_normal") != 0;
    rng.spare_normal = reader.read_attr_double("/", "data_rng_spare_normal");
    ICLAB_INPUT_CHECK(rng.words[0] | rng.words[1] | rng.words[2] | rng.words[3],
                      file << ": /trainer/data_rng/words is all zero, which no xoshiro256** state can be (damaged file)");
    data_rng_.set_state(rng);
    if (reader.has_attr("/", "trainer_state_checksum")) {  // checkpoints before the checksum resume as they are
        const std::string expected =
            state_checksum({static_cast<double>(next_step_), static_cast<double>(settings_.steps), elapsed_before_, interval_loss_,
                            interval_grad_norm_, interval_train_seconds_, static_cast<double>(interval_steps_),
                            static_cast<double>(optimizer_.steps_taken()), rng.has_spare_normal ? 1.0 : 0.0, rng.spare_normal});
        ICLAB_INPUT_CHECK(reader.read_attr_string("/", "trainer_state_checksum") == expected,
                          file << ": the trainer state (next_step, interval_*, optimizer_steps_taken, data_rng_*) does not match its "
                                  "checksum: the checkpoint was damaged or edited");
    }

    const io::Table steps = reader.read_table("/steps");  // columns of one length, checked
    step_index_ = steps.integers("step");
    step_loss_ = steps.numbers("loss");
    step_lr_ = steps.numbers("lr");
    step_grad_norm_ = steps.numbers("grad_norm");
    ICLAB_INPUT_CHECK(step_index_.size() == next_step_, file << ": /steps has " << step_index_.size() << " rows for "
                                                             << next_step_ << " steps");
    const io::Table curves = reader.read_table("/curves");
    curve_names_.clear();
    curve_columns_.clear();
    for (const auto& column : curves.columns) {
        curve_names_.push_back(column.name);
        curve_columns_.push_back(curves.numbers(column.name));
    }
    // Metrics of the last evaluation, for the progress line and last_metrics().
    last_metrics_.clear();
    if (!curve_columns_.empty() && !curve_columns_[0].empty())
        for (std::size_t c = kCurvesBefore.size(); c + kCurvesAfter.size() < curve_names_.size(); ++c)
            last_metrics_.emplace_back(curve_names_[c], curve_columns_[c].back());
    write_live_curves(true);  // drop rows the interrupted session wrote after its checkpoint
}

template class Trainer<float>;
template class Trainer<double>;

}  // namespace iclab::run
