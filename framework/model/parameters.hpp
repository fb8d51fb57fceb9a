#pragma once
// Flat parameter storage (CONVENTIONS.md): every tensor of a model is a named slice of one contiguous
// buffer, so optimizer steps are one loop and checkpoints are one loop over names.
#include <cstddef>
#include <string>
#include <vector>

#include "framework/core/check.hpp"

namespace iclab::model {

struct ParameterInfo {
    std::string name;                // e.g. "blocks.0.attn.w_qkv"
    std::vector<std::size_t> shape;  // e.g. {C, 3C}
    std::size_t offset = 0;          // into the flat buffer
    std::size_t size = 0;            // product of shape
    bool trainable = true;           // false: the optimizer leaves it alone (its gradient is still computed)
    bool weight_decay = false;       // AdamW decays matrices only, not biases or norm gains
    bool nonnegative = false;        // the optimizer projects it onto >= 0 after every step (projected gradient)
    std::string layout;              // the math convention, written into checkpoints (docs/checkpoint_format.md)
};

class ParameterLayout {
public:
    std::size_t add(const std::string& name, std::vector<std::size_t> shape, bool trainable, bool weight_decay,
                    const std::string& layout, bool nonnegative = false) {
        ParameterInfo info;
        info.name = name;
        info.shape = std::move(shape);
        info.size = 1;
        for (std::size_t extent : info.shape) info.size *= extent;
        info.offset = total_;
        info.trainable = trainable;
        info.weight_decay = weight_decay;
        info.nonnegative = nonnegative;
        info.layout = layout;
        total_ += info.size;
        entries_.push_back(std::move(info));
        return entries_.back().offset;
    }

    const ParameterInfo& find(const std::string& name) const {
        for (const auto& entry : entries_)
            if (entry.name == name) return entry;
        throw Error("no parameter named '" + name + "'");
    }

    const std::vector<ParameterInfo>& entries() const { return entries_; }
    std::size_t total() const { return total_; }

private:
    std::vector<ParameterInfo> entries_;
    std::size_t total_ = 0;
};

}  // namespace iclab::model
