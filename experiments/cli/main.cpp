// The `iclab` command. Exit status: 0 success, 1 a failure while working, 2 bad input (nothing was done).
#include <boost/program_options.hpp>

#include <cstdio>
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "experiments/cli/bench.hpp"
#include "experiments/cli/command_line.hpp"
#include "experiments/cli/convert.hpp"
#include "experiments/cli/generate.hpp"
#include "framework/icl/iclaa.hpp"
#include "experiments/cli/inspect.hpp"
#include "experiments/cli/gpt2_commands.hpp"
#include "experiments/cli/predict.hpp"
#include "experiments/cli/run_command.hpp"
#include "experiments/cli/sweep.hpp"
#include "experiments/cli/tokenize.hpp"
#include "experiments/cli/work_count.hpp"
#include "experiments/registry.hpp"
#include "framework/run/run_folder.hpp"
#include "framework/workflow/sweep.hpp"
#include "framework/core/interrupt.hpp"
#include "framework/core/memory.hpp"
#include "framework/core/threads.hpp"
#include "framework/io/provenance.hpp"

namespace po = boost::program_options;
using namespace iclab;

namespace {

using cli::kUsage;
using cli::parse_command;
using cli::positional_arguments;

// Flags shared by `run -m` and `sweep`.
void add_sweep_flags(po::options_description& flags) {
    flags.add_options()("jobs", po::value<int>()->default_value(1), "jobs at a time (local launcher)")(
        "launcher", po::value<std::string>()->default_value("local"), "local (child processes) or slurm (sbatch --array)")(
        "partition", po::value<std::string>(), "slurm: partition")("time", po::value<std::string>(), "slurm: time limit per job")(
        "cpus", po::value<int>()->default_value(1), "slurm: cpus per task (and each job's threads)")(
        "name", po::value<std::string>(), "the sweep folder's name under <output.dir>/sweeps/");
}

cli::LaunchOptions launch_options(const po::variables_map& vm) {
    cli::LaunchOptions options;
    options.jobs = vm["jobs"].as<int>();
    options.threads = static_cast<int>(cli::count_flag(vm["threads"].as<int>(), "--threads", 0, 1024));
    options.launcher = vm["launcher"].as<std::string>();
    if (vm.count("partition")) options.partition = vm["partition"].as<std::string>();
    if (vm.count("time")) options.time = vm["time"].as<std::string>();
    options.cpus = vm["cpus"].as<int>();
    options.dry_run = vm.count("dry-run") > 0;
    options.quiet = vm.count("quiet") > 0;
    return options;
}

int command_sweep(const std::vector<std::string>& args) {
    po::options_description flags("usage: iclab sweep SWEEP.yaml [MORE.yaml ...] [options]  (several: one queue, longest job first)\noptions");
    flags.add_options()("threads", po::value<int>()->default_value(0), "compute threads per job (0: the file's, else cores / jobs)")(
        "dry-run", "plan the sweep and list every job's state (with --launcher slurm: write the script, do not submit)")(
        "quiet", "no progress lines")("help,h", "this help");
    add_sweep_flags(flags);
    const po::variables_map vm = parse_command(args, flags, "positional");
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    const std::vector<std::string> rest = positional_arguments(vm);
    ICLAB_INPUT_CHECK(!rest.empty(), "iclab sweep: give one or more SWEEP.yaml\n" << flags);
    ICLAB_INPUT_CHECK(rest.size() == 1 || !vm.count("name"), "iclab sweep: --name names one sweep; give one SWEEP.yaml with it");
    cli::LaunchOptions options = launch_options(vm);
    std::vector<cli::SweepPart> parts;
    int file_jobs = 0;
    for (const std::string& path : rest) {  // every file loaded (exit 2 naming it) before any is planned
        run::SweepFile file = run::load_sweep_file(path);
        if (vm.count("name")) file.spec.name = vm["name"].as<std::string>();
        if (file_jobs == 0) file_jobs = file.jobs;
        parts.push_back({file.spec, vm["threads"].defaulted() ? file.threads : options.threads});
    }
    if (vm["jobs"].defaulted() && file_jobs > 0) options.jobs = file_jobs;  // the first file that sets jobs
    return cli::launch_sweeps(parts, options);
}

int command_sweep_job(const std::vector<std::string>& args) {
    po::options_description flags("usage: iclab sweep-job SWEEP_DIR INDEX [--threads T]  (one job of a sweep: a Slurm array task)\noptions");
    flags.add_options()("threads", po::value<int>()->default_value(1), "compute threads")("help,h", "this help");
    const po::variables_map vm = parse_command(args, flags, "positional");
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    const std::vector<std::string> rest = positional_arguments(vm);
    ICLAB_INPUT_CHECK(rest.size() == 2, "iclab sweep-job: give SWEEP_DIR and INDEX");
    std::size_t index = 0;
    try {
        // std::stoul reads "-1" as 2^64 - 1: digits only
        if (rest[1].empty() || rest[1].find_first_not_of("0123456789") != std::string::npos) throw std::invalid_argument(rest[1]);
        index = std::stoul(rest[1]);
    } catch (const std::exception&) {
        throw InputError("iclab sweep-job: INDEX must be a job number, got '" + rest[1] + "'");
    }
    return cli::sweep_job(rest[0], index, vm["threads"].as<int>());
}

int command_collect(const std::vector<std::string>& args) {
    po::options_description flags("usage: iclab collect DIR... --out runs.csv|runs.h5 [--overwrite]\n"
                                  "one row per finished run under the folders: resolved config, summary numbers, small "
                                  "tables; curves in long form beside it\noptions");
    flags.add_options()("out", po::value<std::string>(), "runs.csv (curves to runs_curves.csv) or runs.h5 (/runs, /curves)")(
        "overwrite", "replace an existing --out")("help,h", "this help");
    const po::variables_map vm = parse_command(args, flags, "positional");
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    ICLAB_INPUT_CHECK(vm.count("out"), "iclab collect: missing --out runs.csv|runs.h5");
    const std::vector<std::string> rest = positional_arguments(vm);
    cli::collect(std::vector<std::filesystem::path>(rest.begin(), rest.end()), vm["out"].as<std::string>(), vm.count("overwrite") > 0);
    return 0;
}

int command_claims(const std::vector<std::string>& args) {
    po::options_description flags("usage: iclab claims DIR... [--out claims.csv] [--overwrite]\n"
                                  "the declared claims of the finished runs under the folders, pooled over the seeds of each "
                                  "setting, with their verdicts\noptions");
    flags.add_options()("out", po::value<std::string>(), "also write the table as CSV")("overwrite", "replace an existing --out")(
        "help,h", "this help");
    const po::variables_map vm = parse_command(args, flags, "positional");
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    const std::vector<std::string> rest = positional_arguments(vm);
    cli::claims(std::vector<std::filesystem::path>(rest.begin(), rest.end()), vm.count("out") ? vm["out"].as<std::string>() : "",
                vm.count("overwrite") > 0);
    return 0;
}

int command_show(const std::vector<std::string>& args) {
    po::options_description flags("usage: iclab show RUN_DIR  (the run's summary numbers and tables, from results.h5)\noptions");
    flags.add_options()("help,h", "this help");
    const po::variables_map vm = parse_command(args, flags, "run_dir");
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    ICLAB_INPUT_CHECK(vm.count("run_dir"), "iclab show: missing RUN_DIR");
    cli::show(vm["run_dir"].as<std::string>());
    return 0;
}

int command_run(const std::vector<std::string>& args) {
    po::options_description flags(
        "usage: iclab run CONFIG [key.path=value ...] [options]\n       iclab run --resume RUN_DIR [options]\noptions");
    flags.add_options()("print-config", "print the resolved config (YAML) and exit")(
        "dry-run", "validate the config (with --resume: that the run can be resumed) and exit")(
        "quiet", "no progress output; stdout keeps only the run folder")("overwrite", "replace a completed run of the same name")(
        "resume", po::value<std::string>(), "continue the interrupted run in RUN_DIR from its checkpoint.h5, with its config.yaml")(
        "stop-after", po::value<std::int64_t>()->default_value(0),
        "stop after this step with a checkpoint and without results.h5, as if interrupted (continue with --resume)")(
        "stop-after-units", po::value<std::int64_t>()->default_value(0),
        "stop after this many units of the work after training (ICLAA: learned-map fits, chunks of scored pairs) are stored "
        "in this session, as if interrupted (continue with --resume)")(
        "help-config", "list every config key of the config's experiment")(
        "threads", po::value<int>()->default_value(0), "compute threads (0: OMP_NUM_THREADS, else the cores not busy now; with -m: per job, "
                                                       "0 = cores / jobs)")("help,h", "this help");
    po::options_description sweep_flags("multirun (a sweep over the overrides: key=a,b,c or key=i:j for i, ..., j-1)");
    add_sweep_flags(sweep_flags);
    sweep_flags.add_options()("multirun,m", "run every combination of the overrides' values as a sweep");
    flags.add(sweep_flags);
    const po::variables_map vm = parse_command(args, flags, "positional");
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    const std::vector<std::string> rest = positional_arguments(vm);
    if (vm.count("multirun")) {
        ICLAB_INPUT_CHECK(!vm.count("resume"), "iclab run -m: a sweep resumes its interrupted jobs by itself; drop --resume");
        ICLAB_INPUT_CHECK(!rest.empty(), "iclab run -m: missing CONFIG");
        for (const auto& o : std::vector<std::string>(rest.begin() + 1, rest.end()))
            ICLAB_INPUT_CHECK(o.find('=') != std::string::npos, "iclab run -m: '" << o << "' is not an override key.path=value");
        run::SweepSpec spec = run::sweep_from_command_line(rest.front(), std::vector<std::string>(rest.begin() + 1, rest.end()));
        if (vm.count("name")) spec.name = vm["name"].as<std::string>();
        return cli::launch_sweep(spec, launch_options(vm));
    }
    run::RunOptions options;
    options.quiet = vm.count("quiet") > 0;
    options.overwrite = vm.count("overwrite") > 0;
    options.stop_after = static_cast<std::size_t>(cli::count_flag(vm["stop-after"].as<std::int64_t>(), "iclab run: --stop-after", 0, INT64_MAX));
    options.stop_after_units =
        static_cast<std::size_t>(cli::count_flag(vm["stop-after-units"].as<std::int64_t>(), "iclab run: --stop-after-units", 0, INT64_MAX));
    cli::count_flag(vm["threads"].as<int>(), "iclab run: --threads", 0, 1024);  // --dry-run too, before configure_threads

    config::Config cfg;
    std::string config_path, resume_text;
    if (vm.count("resume")) {
        // A resumed run continues with exactly the config it started with (RUN_DIR/config.yaml), so that
        // it ends as the uninterrupted run would: no CONFIG, no overrides, no --overwrite.
        options.resume_dir = vm["resume"].as<std::string>();
        ICLAB_INPUT_CHECK(rest.empty(), "iclab run --resume takes no CONFIG or overrides (got '"
                                            << rest.front() << "'): the run continues with " << (options.resume_dir / "config.yaml").string()
                                            << " as it started");
        ICLAB_INPUT_CHECK(!options.overwrite, "iclab run --resume: --overwrite does not apply (the run folder is continued)");
        const run::ResumePoint point = run::load_resume_config(options.resume_dir, experiments::catalog());
        ICLAB_INPUT_CHECK(options.stop_after == 0 || options.stop_after > point.step,
                          "iclab run --resume: --stop-after " << options.stop_after << " is not after the checkpoint's step " << point.step);
        cfg = point.config;
        config_path = (options.resume_dir / "config.yaml").string();
        resume_text = " at step " + std::to_string(point.step) + " of " + std::to_string(point.total_steps);
    } else {
        ICLAB_INPUT_CHECK(!rest.empty(), "iclab run: missing CONFIG\n" << kUsage);
        config_path = rest.front();
        cfg = cli::load_run_config(config_path, std::vector<std::string>(rest.begin() + 1, rest.end()), "iclab run");
        ICLAB_INPUT_CHECK(!cfg.has("train.steps") || options.stop_after < static_cast<std::size_t>(cfg.get_int("train.steps")),
                          "iclab run: --stop-after " << options.stop_after << " is not before train.steps = "
                                                     << cfg.get_int("train.steps") << " (the run would simply finish)");
    }
    const auto& experiment = experiments::catalog().find(cfg.get_string("experiment"));
    if (vm.count("help-config")) {
        std::cout << experiment.schema().help_text();
        return 0;
    }
    if (vm.count("print-config")) {
        std::cout << cfg.to_yaml();
        return 0;
    }
    if (vm.count("dry-run")) {
        if (experiment.check_inputs) experiment.check_inputs(cfg);  // the data files the config names
        if (vm.count("resume")) std::cout << options.resume_dir.string() << " can be resumed" << resume_text << " (experiment " << experiment.name << ")\n";
        else std::cout << "config " << config_path << " is valid (experiment " << experiment.name << ")\n";
        std::cout << "estimated " << run::describe_estimate(experiment.estimate(cfg)) << "\n";
        return 0;
    }
    // ICLAB_COUNT_WORK=1: the run's counted GEMM work and peak memory against its estimate, on stderr (work_count.hpp)
    const bool count_work = cli::work_count_requested();
    if (count_work) cli::work_count_start();
    const run::RunOutcome outcome = cli::run_loaded_config(cfg, options, vm["threads"].as<int>());
    if (count_work) cli::work_count_report(experiment.estimate(cfg), std::cerr);
    const std::string why = interrupt_requested() ? std::string(signal_name(interrupt_signal()))
                                                  : options.stop_after_units > 0 ? "--stop-after-units" : "--stop-after";
    if (!outcome.completed && outcome.steps_done < outcome.steps_total)
        std::cerr << "iclab: stopped after step " << outcome.steps_done << " of " << outcome.steps_total << " (" << why
                  << "); continue with: iclab run --resume " << outcome.run_dir.string() << "\n";
    else if (!outcome.completed)  // in the work after training; a staged experiment stored its finished units (log.txt says which)
        std::cerr << "iclab: stopped after training (" << why << ")"
                  << (std::filesystem::is_directory(outcome.run_dir / run::kStagesDir)
                          ? ", its finished units stored in " + (outcome.run_dir / run::kStagesDir).string()
                          : std::string())
                  << "; continue with: iclab run --resume " << outcome.run_dir.string() << "\n";
    else if (options.stop_after_units > 0)
        std::cerr << "iclab: --stop-after-units " << options.stop_after_units
                  << ": the run completed first (only an experiment that stores units after training stops there: iclaa)\n";
    std::cout << outcome.run_dir.string() << std::endl;  // last line of stdout: the run folder, for scripts
    return interrupt_requested() ? 128 + interrupt_signal() : 0;
}

int command_list() {
    std::cout << "experiments:\n";
    for (const auto& e : experiments::catalog().all()) std::printf("  %-20s %s\n", e.name.c_str(), e.description.c_str());
    std::filesystem::path configs = "configs";
    if (!std::filesystem::is_directory(configs)) configs = std::filesystem::path(ICLAB_SOURCE_DIR) / "configs";
    std::cout << "configs (" << configs.string() << "):\n";
    std::vector<std::string> found;
    if (std::filesystem::is_directory(configs))
        for (const auto& entry : std::filesystem::recursive_directory_iterator(configs))
            if (entry.is_regular_file() && entry.path().extension() == ".yaml") found.push_back(entry.path().string());
    std::sort(found.begin(), found.end());
    for (const auto& f : found) {
        std::string name;
        try {
            name = experiments::catalog().peek_experiment_name(f, {});
        } catch (const std::exception&) {
        }
        if (name.empty()) {  // a sweep file: the experiments of its configs
            try {
                const run::SweepFile sweep = run::load_sweep_file(f);
                std::vector<std::string> names;
                for (const auto& config : sweep.spec.configs) {
                    std::string experiment = "?";
                    try {
                        experiment = experiments::catalog().peek_experiment_name(config, {});
                    } catch (const std::exception&) {
                    }
                    if (std::find(names.begin(), names.end(), experiment) == names.end()) names.push_back(experiment);
                }
                name = "sweep of " + std::to_string(sweep.spec.configs.size()) + " config(s): ";
                for (std::size_t i = 0; i < names.size() && i < 4; ++i) name += (i ? ", " : "") + names[i];
                if (names.size() > 4) name += ", ...";
            } catch (const std::exception&) {
                name = "? (neither a config nor a sweep file)";
            }
        }
        std::printf("  %-45s %s\n", f.c_str(), name.c_str());
    }
    return 0;
}

// What a results file's provenance records of the binary (framework/io/provenance.hpp), one line: the commit is
// the one the binary was built from (stamped at build time), "-dirty" when its tree had changes then.
int command_version(const std::vector<std::string>& args) {
    ICLAB_INPUT_CHECK(args.empty(), "iclab version takes no arguments, got '" << args.front() << "'\n" << kUsage);
    const std::string dirty = io::git_dirty();
    std::cout << "iclab " << io::iclab_version() << " commit " << io::git_commit()
              << (dirty == "true" ? "-dirty" : dirty == "false" ? "" : " (tree state unknown)") << ", " << io::compiler() << ", "
              << io::build_type() << ", " << io::simd_target() << ", OpenBLAS core " << io::openblas_core() << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    iclab::reexec_with_wait_policy(argv);
    iclab::keep_freed_memory();
    try {
        if (argc < 2) {
            std::cerr << kUsage;
            return 2;
        }
        const std::string command = argv[1];
        const std::vector<std::string> args(argv + 2, argv + argc);
        if (command == "run") return command_run(args);
        if (command == "list") return command_list();
        if (command == "predict") return cli::command_predict(args);
        if (command == "convert") return cli::command_convert(args);
        if (command == "generate") return cli::command_generate(args);
        if (command == "import") return cli::command_import(args);
        if (command == "export") return cli::command_export(args);
        if (command == "bench") return cli::command_bench(args);
        if (command == "sweep") return command_sweep(args);
        if (command == "collect") return command_collect(args);
        if (command == "claims") return command_claims(args);
        if (command == "show") return command_show(args);
        if (command == "sweep-job") return command_sweep_job(args);
        if (command == "tokenize") return cli::command_tokenize(args);
        if (command == "version" || command == "--version") return command_version(args);
        if (command == "help" || command == "--help" || command == "-h") {
            std::cout << kUsage;
            return 0;
        }
        std::cerr << "iclab: unknown command '" << command << "'\n" << kUsage;
        return 2;
    } catch (const iclab::InputError& error) {
        std::cerr << error.what() << "\n";
        return 2;
    } catch (const po::error& error) {
        std::cerr << "iclab: " << error.what() << "\n" << kUsage;
        return 2;
    } catch (const std::exception& error) {
        std::cerr << "iclab: error: " << error.what() << "\n";
        return 1;
    }
}
