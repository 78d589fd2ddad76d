// The plot widget's curves between frames (plot_widget.cpp): per Series and x scale, x in axis space
// (log10 on a log x axis), the smoothed y, the bounds and the levels of detail for min/max
// decimation. Appended points extend a cached curve; any other change rebuilds it; a series not
// drawn for a while is dropped. Keyed by the Series' address: a caller keeps a Series alive (and
// in place) while it plots it. Not thread-safe: the UI thread (it reads ImGui's frame count).
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "ui/plot/plot_widget.h"

namespace tw::ui {

// One level of detail of a curve: of each block of `block` consecutive points, the minimum, the
// maximum and the first NaN (so gaps survive), in x order. Min/max decimation of a level gives the
// picture of the full curve when a bucket spans several blocks (only an extreme within one block
// of a bucket's edge can land in the neighbouring bucket), from 2–3 points per block.
struct LodLevel {
    size_t block = 0;  // points of the curve per block: 16, 128, 1024, ...
    Series pts;
    size_t src_done = 0, out_done = 0;  // complete blocks so far: points of the curve, points of pts

    // Brings the level up to date with `s`, which only grew since the last call: the last,
    // incomplete block is redone, complete ones are kept.
    void extend(const Series& s);
};

// The levels of a curve, each 8× coarser than the one before, made while the curve has at least
// kLodMinBlocks blocks of the level's size.
struct Lod {
    std::vector<LodLevel> levels;

    void extend(const Series& s);
};

// One smoothing weight's copy of a series: the debiased EMA, its levels of detail, and the EMA's
// state after its last point so appended points continue it.
struct Smoothed {
    double alpha = 0;
    Series pts;  // x in axis space, y smoothed
    Lod lod;
    double ema = 0, alpha_t = 1;  // debiased_ema's recurrence state
    int last_frame = 0;
};

// A series prepared for one x scale (linear or log).
struct Prepared {
    size_t size = 0;                                      // points of the data covered
    double x_first = std::numeric_limits<double>::quiet_NaN(), x_last = std::numeric_limits<double>::quiet_NaN(), y_last = std::numeric_limits<double>::quiet_NaN();  // to tell an append from a refill
    int last_frame = 0;
    Series axis_raw;  // raw y with x in axis space; empty on a linear x axis (the data is used as is)
    Lod lod_raw;
    double x_lo = std::numeric_limits<double>::infinity(), x_hi = -std::numeric_limits<double>::infinity();                // finite x range, axis space
    double y_lo = std::numeric_limits<double>::infinity(), y_hi = -std::numeric_limits<double>::infinity(), y_pos = std::numeric_limits<double>::infinity();  // raw y range (data units); y_pos: smallest y > 0
    std::vector<Smoothed> smoothed;                  // usually one; more if plots differ in smoothing
};

// What a frame needs of one series.
struct Curve {
    const Series* raw = nullptr;  // x in axis space
    const Lod* lod_raw = nullptr;
    const Series* smooth = nullptr;  // nullptr without smoothing
    const Lod* lod_smooth = nullptr;
    const Prepared* bounds = nullptr;
};

// Min/max decimation of `s` to [x_lo, x_hi]. The range is cut into up to kLodPieces pieces, and
// each piece is decimated from the coarsest level of detail that still has kLodBlocksPerBucket
// blocks per bucket there, so density that varies along x (a log x axis, irregular steps) gets
// the full curve where it is sparse. Each piece keeps only its own points (decimate_minmax adds a
// neighbour on each side), except the outer neighbours of the whole range.
Series decimate(const Series& s, const Lod& lod, double x_lo, double x_hi, size_t buckets);

// The prepared copies of `s` for this x scale and smoothing: extended when points were appended
// since the last call (same first point, same old last point), rebuilt when anything else changed.
// A new smoothing weight replaces the weights no plot used this frame (a dragged slider must not
// pile up copies); a new x scale drops the other scale's copy if it was not used this frame.
Curve prepare(const Series* s, double alpha, bool log_x);

// Drops every cached series (plot_cache_clear).
void curve_cache_clear();

}  // namespace tw::ui
