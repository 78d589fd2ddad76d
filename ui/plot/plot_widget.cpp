// The plot widget: layout, ticks, decimated lines, legend, tooltip, zoom and pan (plot_widget.h).
#include "ui/plot/plot_widget.h"
#include "ui/plot/curve_cache.h"
#include "ui/plot/plot_axis.h"

#include "ui/logic/legend_place.h"
#include "ui/logic/plot_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "core/assert.h"
#include "ui/logic/ticks.h"

namespace tw::ui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr float kRawAlpha = 0.25f;         // the raw curve's opacity when a smoothed one is drawn over it
constexpr double kWheelZoom = 0.85;        // range factor per wheel notch

// ---------------------------------------------------------------------------------------------
// Drawing helpers
// ---------------------------------------------------------------------------------------------

ImU32 with_alpha(ImU32 col, float f) {
    const ImU32 a = (col >> IM_COL32_A_SHIFT) & 0xFF;
    return (col & ~IM_COL32_A_MASK) | (ImU32(float(a) * f + 0.5f) << IM_COL32_A_SHIFT);
}

// A curve is drawn per pixel column. Where the points are dense (neighbouring columns both hold
// points, as after min/max decimation), each column is the span from its lowest to its highest
// point and neighbouring spans are joined into one filled triangle strip: it covers exactly what
// the polyline through the same points covers (a segment between two columns stays inside their
// trapezoid), with half the vertices and no overdraw, and without the polyline's flaw on such data:
// ImGui's anti-aliased polyline collapses to zero width where a segment turns back on itself, so a
// dense min/max zigzag shows as loose dots. Where the points are sparse (zoomed in, the first steps
// on a log axis) the segments between columns are anti-aliased polylines.
struct Column {
    float x;            // pixel centre
    float top, bottom;  // lowest and highest point (screen y: top < bottom)
    float first, last;  // y of its first and last point in x order
};

class CurveDrawer {
public:
    CurveDrawer(ImDrawList* dl, ImU32 col, float thickness) : dl_(dl), col_(col), th_(thickness) {}

    // One unbroken run of columns (no gap inside).
    void draw(const std::vector<Column>& cols) {
        line_.clear();
        const size_t n = cols.size();
        for (size_t i = 0; i < n;) {
            size_t j = i;  // columns i..j are neighbours: a dense stretch
            while (j + 1 < n && cols[j + 1].x - cols[j].x <= 1.0f) ++j;
            const bool point = i == j && cols[i].top == cols[i].bottom;
            if (!line_.empty() || point) line_.emplace_back(cols[i].x, cols[i].first);
            if (!point) {
                flush_line();
                band(cols, i, j);
                if (j + 1 < n) line_.emplace_back(cols[j].x, cols[j].last);
            }
            i = j + 1;
        }
        if (line_.size() == 1 && n == 1) {  // a point alone between gaps
            const float r = std::max(1.0f, th_);
            dl_->AddRectFilled(ImVec2(line_[0].x - r, line_[0].y - r), ImVec2(line_[0].x + r, line_[0].y + r), col_);
        }
        flush_line();
    }

private:
    void flush_line() {
        if (line_.size() >= 2) dl_->AddPolyline(line_.data(), int(line_.size()), col_, ImDrawFlags_None, th_);
        line_.clear();
    }

    // Columns i..j as a strip of spans widened by the line's thickness, from half a pixel left of
    // the first column to half a pixel right of the last (a single column: a 1 px bar).
    // Rasterisation samples pixel centres, and the strip's inner vertices sit on them, so:
    // * each span reaches half way to its neighbours' ends, or a steep stretch with one point per
    //   column (a sparse curve squeezed by a log axis) would show as separate dots where the
    //   polyline through the same points is continuous;
    // * the end columns get half-pixel caps: a GPU's fill rule gives a centre on a shared edge to
    //   one side only, so without the caps the last column was never drawn (a gap after every
    //   short stretch).
    void band(const std::vector<Column>& cols, size_t i, size_t j) {
        const ImVec2 uv = ImGui::GetFontTexUvWhitePixel();
        const float h = th_ / 2;
        posts_.clear();
        for (size_t k = i; k <= j; ++k) {
            float top = cols[k].top, bottom = cols[k].bottom;
            for (size_t nb : {k - 1, k + 1}) {  // the neighbours inside the stretch (k − 1 wraps past i = 0)
                if (nb < i || nb > j) continue;
                const float mid = nb < k ? (cols[nb].last + cols[k].first) / 2 : (cols[k].last + cols[nb].first) / 2;
                top = std::min(top, mid), bottom = std::max(bottom, mid);
            }
            if (k == i) posts_.push_back({cols[k].x - 0.5f, top - h, bottom + h});
            posts_.push_back({cols[k].x, top - h, bottom + h});
            if (k == j) posts_.push_back({cols[k].x + 0.5f, top - h, bottom + h});
        }
        for (size_t start = 0; start + 1 < posts_.size();) {
            const size_t end = std::min(posts_.size() - 1, start + 8190);  // a strip well inside 16-bit indices
            const int n = int(end - start + 1);
            dl_->PrimReserve(6 * (n - 1), 2 * n);
            const ImDrawIdx base = ImDrawIdx(dl_->_VtxCurrentIdx);
            for (size_t k = start; k <= end; ++k) {
                dl_->PrimWriteVtx(ImVec2(posts_[k].x, posts_[k].top), uv, col_);
                dl_->PrimWriteVtx(ImVec2(posts_[k].x, posts_[k].bottom), uv, col_);
            }
            for (int k = 0; k + 1 < n; ++k) {
                const ImDrawIdx a = ImDrawIdx(base + 2 * k);
                dl_->PrimWriteIdx(a), dl_->PrimWriteIdx(ImDrawIdx(a + 1)), dl_->PrimWriteIdx(ImDrawIdx(a + 2));
                dl_->PrimWriteIdx(ImDrawIdx(a + 2)), dl_->PrimWriteIdx(ImDrawIdx(a + 1)),
                    dl_->PrimWriteIdx(ImDrawIdx(a + 3));
            }
            start = end;  // the next strip starts at this one's last post, so they join
        }
    }

    struct Post {
        float x, top, bottom;  // one vertical edge of the strip, in pixels
    };
    ImDrawList* dl_;
    ImU32 col_;
    float th_;
    std::vector<ImVec2> line_;
    std::vector<Post> posts_;
};

// The curve through the points of `d` (x in axis space, y in data units); non-finite points
// (NaN y, x <= 0 on log x, y <= 0 on log y) are gaps.
void draw_curve(ImDrawList* dl, const Series& d, const Axis& xa, const Axis& ya, ImU32 col, float thickness) {
    static std::vector<Column> cols;
    cols.clear();
    CurveDrawer drawer(dl, col, thickness);
    for (size_t i = 0; i < d.x.size(); ++i) {
        const double ax = d.x[i], ay = ya.to_axis(d.y[i]);
        if (!std::isfinite(ax) || !std::isfinite(ay)) {
            if (!cols.empty()) drawer.draw(cols);
            cols.clear();
            continue;
        }
        const float x = std::floor(xa.px(ax)) + 0.5f, y = ya.px(ay);
        if (!cols.empty() && cols.back().x == x) {
            Column& c = cols.back();
            c.top = std::min(c.top, y), c.bottom = std::max(c.bottom, y), c.last = y;
        } else {
            cols.push_back({x, y, y, y, y});
        }
    }
    if (!cols.empty()) drawer.draw(cols);
}

// Text reading bottom to top with its baseline's start at `bottom_left` (ImGui 1.86 has no rotated
// text: draw it flat, then turn its vertices by 90° about that point).
// The filled area between `lo` and `hi` (same x as `data`, data units) at ~20% of the curve's
// colour: per pixel column the lowest and highest bound, joined column to column by quads.
void draw_band(ImDrawList* dl, const Series& data, const Series& lo, const Series& hi, const Axis& xa, const Axis& ya,
               ImU32 col) {
    const size_t n = std::min({data.x.size(), lo.y.size(), hi.y.size()});
    const ImU32 fill = with_alpha(col, 0.2f);
    bool have = false;
    float px = 0, ptop = 0, pbot = 0;  // the previous column
    float cx = 0, ctop = 0, cbot = 0;  // the column being gathered
    bool open = false;
    auto flush = [&] {
        if (!open) return;
        if (have && cx > px) {
            dl->PathLineTo(ImVec2(px, ptop));
            dl->PathLineTo(ImVec2(cx, ctop));
            dl->PathLineTo(ImVec2(cx, cbot));
            dl->PathLineTo(ImVec2(px, pbot));
            dl->PathFillConvex(fill);
        } else if (!have) {
            dl->AddLine(ImVec2(cx, ctop), ImVec2(cx, cbot), fill);
        }
        px = cx, ptop = ctop, pbot = cbot, have = true;
        open = false;
    };
    for (size_t i = 0; i < n; ++i) {
        const double ax = xa.to_axis(data.x[i]), a_lo = ya.to_axis(lo.y[i]), a_hi = ya.to_axis(hi.y[i]);
        if (!std::isfinite(ax) || !std::isfinite(a_lo) || !std::isfinite(a_hi)) {
            flush();
            have = false;  // a gap: the band breaks as the curve does
            continue;
        }
        const float x = std::floor(xa.px(ax)) + 0.5f, top = ya.px(a_hi), bottom = ya.px(a_lo);
        if (open && x == cx) {
            ctop = std::min(ctop, top), cbot = std::max(cbot, bottom);
            continue;
        }
        flush();
        cx = x, ctop = top, cbot = bottom, open = true;
    }
    flush();
}

void draw_dot(ImDrawList* dl, ImVec2 c, ImU32 col);

// A dot on every point in view (sparse series: validation losses, one per round).
void draw_points(ImDrawList* dl, const Series& axis_pts, const Axis& xa, const Axis& ya, ImU32 col) {
    const auto first = std::lower_bound(axis_pts.x.begin(), axis_pts.x.end(), xa.lo) - axis_pts.x.begin();
    const auto last = std::upper_bound(axis_pts.x.begin(), axis_pts.x.end(), xa.hi) - axis_pts.x.begin();
    if (last - first > 4000) return;  // dense: the line says it all
    for (auto i = first; i < last; ++i) {
        const double ay = ya.to_axis(axis_pts.y[size_t(i)]);
        if (!std::isfinite(ay)) continue;
        draw_dot(dl, ImVec2(xa.px(axis_pts.x[size_t(i)]), ya.px(ay)), col);
    }
}

void add_text_vertical(ImDrawList* dl, ImVec2 bottom_left, ImU32 col, const char* text) {
    const int begin = dl->VtxBuffer.Size;
    dl->AddText(bottom_left, col, text);
    for (int i = begin; i < dl->VtxBuffer.Size; ++i) {
        ImVec2& p = dl->VtxBuffer[i].pos;
        const float dx = p.x - bottom_left.x, dy = p.y - bottom_left.y;
        p = ImVec2(bottom_left.x + dy, bottom_left.y - dx);
    }
}

struct Layout {
    ImVec2 min, max;  // the whole region
    PlotRect area;    // inside the axes
};

struct LegendRow {
    ImVec2 min, max;
    bool hovered = false;
    size_t series = 0;  // the series the row stands for
};

// ---------------------------------------------------------------------------------------------
// The widget's phases
// ---------------------------------------------------------------------------------------------

void draw_grid_and_ticks(ImDrawList* dl, const PlotRect& r, const Axis& xa, const Axis& ya, const std::vector<Tick>& xt,
                         const std::vector<Tick>& yt) {
    const ImU32 major = ImGui::GetColorU32(ImGuiCol_Text, 0.13f);
    const ImU32 minor = ImGui::GetColorU32(ImGuiCol_Text, 0.05f);
    const ImU32 mark = ImGui::GetColorU32(ImGuiCol_Text, 0.6f);
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text, 0.85f);
    const float fs = ImGui::GetFontSize();

    float last_right = -kInf;
    for (const Tick& t : xt) {
        if (t.value < xa.lo || t.value > xa.hi) continue;
        const float x = std::floor(xa.px(t.value)) + 0.5f;
        dl->AddLine(ImVec2(x, r.min.y), ImVec2(x, r.max.y), t.major ? major : minor);
        dl->AddLine(ImVec2(x, r.max.y), ImVec2(x, r.max.y + (t.major ? 4.0f : 2.0f)), mark);
        if (!t.major || t.label.empty()) continue;
        const float w = ImGui::CalcTextSize(t.label.c_str()).x;
        if (x - w / 2 < last_right + fs * 0.5f) continue;  // would overlap its left neighbour
        dl->AddText(ImVec2(x - w / 2, r.max.y + 5), text, t.label.c_str());
        last_right = x + w / 2;
    }
    float last_top = kInf;
    for (const Tick& t : yt) {
        if (t.value < ya.lo || t.value > ya.hi) continue;
        const float y = std::floor(ya.px(t.value)) + 0.5f;
        dl->AddLine(ImVec2(r.min.x, y), ImVec2(r.max.x, y), t.major ? major : minor);
        dl->AddLine(ImVec2(r.min.x - (t.major ? 4.0f : 2.0f), y), ImVec2(r.min.x, y), mark);
        if (!t.major || t.label.empty()) continue;
        if (y + fs / 2 > last_top - 2) continue;
        const float w = ImGui::CalcTextSize(t.label.c_str()).x;
        dl->AddText(ImVec2(r.min.x - 6 - w, y - fs / 2), text, t.label.c_str());
        last_top = y - fs / 2;
    }
}

// The legend's geometry: rows of the font's height, a swatch and the label, `pad` around them.
constexpr float kLegendPad = 4;
constexpr float kLegendMargin = 8;   // between the legend and the plot area's edges
constexpr float kLegendSampleStep = 4;  // pixels between the points sampled along a drawn segment

struct LegendSize {
    size_t series_rows = 0, note_rows = 0;  // rows that fit in the plot area's height
    float w = 0, h = 0;
};

float legend_row_h() { return ImGui::GetFontSize() + 2; }

// The rows that fit in `area_h` (series first, then the notes) and the box they need.
LegendSize legend_size(const std::vector<PlotSeries>& series, const PlotOptions& opt, float area_h) {
    LegendSize ls;
    const float fs = ImGui::GetFontSize(), swatch = fs * 1.2f, row_h = legend_row_h();
    const size_t fit = size_t(std::max(0.0f, (area_h - 2 * kLegendMargin - 2 * kLegendPad) / row_h));
    float label_w = 0;
    for (const PlotSeries& s : series) {
        if (!s.in_legend || ls.series_rows == fit) continue;
        ++ls.series_rows;
        label_w = std::max(label_w, ImGui::CalcTextSize(s.label.c_str()).x);
    }
    if (ls.series_rows == 0) return ls;  // notes explain series; alone they say nothing
    for (const LegendNote& n : opt.legend_notes) {
        if (ls.series_rows + ls.note_rows == fit) break;
        ++ls.note_rows;
        label_w = std::max(label_w, ImGui::CalcTextSize(n.label.c_str()).x);
    }
    ls.w = swatch + 6 + label_w + 2 * kLegendPad;
    ls.h = float(ls.series_rows + ls.note_rows) * row_h + 2 * kLegendPad;
    return ls;
}

// The drawn data in pixels, for the legend's place: each visible curve as drawn on top (the
// smoothed one when smoothing; its faint raw curve may go under the legend) decimated as it is
// drawn, with points every few pixels along longer segments so a line crossing a corner between
// two far-apart points counts, and the dots of point series.
std::vector<PxPoint> drawn_pixels(const std::vector<PlotSeries>& series, const std::vector<Curve>& curves,
                                  const Axis& xa, const Axis& ya, size_t buckets) {
    std::vector<PxPoint> out;
    for (size_t i = 0; i < series.size(); ++i) {
        const Curve& cv = curves[i];
        if (!cv.raw || cv.raw->x.empty()) continue;
        const Series d = cv.smooth ? decimate(*cv.smooth, *cv.lod_smooth, xa.lo, xa.hi, buckets)
                                   : decimate(*cv.raw, *cv.lod_raw, xa.lo, xa.hi, buckets);
        bool have = false;
        PxPoint prev;
        for (size_t k = 0; k < d.x.size(); ++k) {
            const double ay = ya.to_axis(d.y[k]);
            if (!std::isfinite(d.x[k]) || !std::isfinite(ay)) {
                have = false;  // a gap: nothing drawn across it
                continue;
            }
            const PxPoint p{xa.px(d.x[k]), ya.px(ay)};
            if (have) {
                const float len = std::max(std::abs(p.x - prev.x), std::abs(p.y - prev.y));
                const int steps = std::min(256, int(len / kLegendSampleStep));
                for (int t = 1; t < steps; ++t) {
                    const float f = float(t) / float(steps);
                    out.push_back({prev.x + (p.x - prev.x) * f, prev.y + (p.y - prev.y) * f});
                }
            }
            out.push_back(p);
            prev = p, have = true;
        }
    }
    return out;
}

// The legend's series rows inside `box` (legend_place.h), submitted as buttons before the plot
// area's own button so they win the hover; a click toggles the series.
std::vector<LegendRow> legend_buttons(std::vector<PlotSeries>& series, const LegendSize& ls, const PxBox& box) {
    std::vector<LegendRow> rows;
    const float row_h = legend_row_h();
    for (size_t i = 0; i < series.size() && rows.size() < ls.series_rows; ++i) {
        if (!series[i].in_legend) continue;
        LegendRow row;
        row.series = i;
        row.min = ImVec2(box.x0, box.y0 + kLegendPad + float(rows.size()) * row_h);
        row.max = ImVec2(box.x1, row.min.y + row_h);
        ImGui::SetCursorScreenPos(row.min);
        ImGui::PushID(int(i));
        if (ImGui::InvisibleButton("##legend", ImVec2(row.max.x - row.min.x, row_h))) {
            series[i].visible = !series[i].visible;
        }
        row.hovered = ImGui::IsItemHovered();
        ImGui::PopID();
        rows.push_back(row);
    }
    return rows;
}

// A dot of a point series: ringed in the background colour, so on a line of the same colour (a
// run's training curve) it still reads as a validation point.
void draw_dot(ImDrawList* dl, ImVec2 c, ImU32 col) {
    dl->AddCircleFilled(c, 5.0f, ImGui::GetColorU32(ImGuiCol_WindowBg));
    dl->AddCircleFilled(c, 3.5f, col);
}

void draw_legend(ImDrawList* dl, const std::vector<PlotSeries>& series, const std::vector<LegendRow>& rows,
                 const PlotOptions& opt, const LegendSize& ls, const PxBox& box) {
    if (rows.empty()) return;
    const float fs = ImGui::GetFontSize(), pad = kLegendPad, swatch = fs * 1.2f, row_h = legend_row_h();
    dl->AddRectFilled(ImVec2(box.x0, box.y0), ImVec2(box.x1, box.y1), ImGui::GetColorU32(ImGuiCol_PopupBg, 0.85f), 3.0f);
    dl->AddRect(ImVec2(box.x0, box.y0), ImVec2(box.x1, box.y1), ImGui::GetColorU32(ImGuiCol_Border), 3.0f);
    for (const LegendRow& row : rows) {
        const PlotSeries& s = series[row.series];
        if (row.hovered) dl->AddRectFilled(row.min, row.max, ImGui::GetColorU32(ImGuiCol_HeaderHovered, 0.5f));
        const float y = (row.min.y + row.max.y) / 2;
        const ImU32 col = s.visible ? s.color : ImGui::GetColorU32(ImGuiCol_TextDisabled);
        dl->AddLine(ImVec2(row.min.x + pad, y), ImVec2(row.min.x + pad + swatch, y), col, 2.0f);
        if (s.points) draw_dot(dl, ImVec2(row.min.x + pad + swatch / 2, y), col);
        dl->AddText(ImVec2(row.min.x + pad + swatch + 6, y - fs / 2),
                    ImGui::GetColorU32(s.visible ? ImGuiCol_Text : ImGuiCol_TextDisabled), s.label.c_str());
    }
    // The notes, in the text colour: how a kind of series is drawn, whatever its run's colour.
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    for (size_t k = 0; k < ls.note_rows; ++k) {
        const LegendNote& n = opt.legend_notes[k];
        const float top = box.y0 + pad + float(ls.series_rows + k) * row_h, y = top + row_h / 2;
        if (n.dot)
            draw_dot(dl, ImVec2(box.x0 + pad + swatch / 2, y), text);
        else
            dl->AddLine(ImVec2(box.x0 + pad, y), ImVec2(box.x0 + pad + swatch, y), text, 2.0f);
        dl->AddText(ImVec2(box.x0 + pad + swatch + 6, y - fs / 2), text, n.label.c_str());
    }
}

// Vertical markers (PlotOptions::markers) over the curves, inside the plot area's clip: a faint
// line each (2 px while hovered), the label along it near the top unless it would overlap the
// previous label. Returns the markers within a few pixels of the cursor's x (`mouse_x`; NaN when the
// cursor is not over the plot) for the tooltip. A few vertices per marker: no cache needed.
std::vector<const PlotMarker*> draw_markers(ImDrawList* dl, const std::vector<PlotMarker>& markers, const PlotRect& r,
                                            const Axis& xa, float mouse_x) {
    constexpr float kHoverPx = 4;
    std::vector<const PlotMarker*> near;
    const float fs = ImGui::GetFontSize();
    float last_label = -kInf;
    for (const PlotMarker& m : markers) {
        const double a = xa.to_axis(m.x);
        if (!std::isfinite(a) || a < xa.lo || a > xa.hi) continue;
        const float x = std::floor(xa.px(a)) + 0.5f;
        const bool hot = std::abs(x - mouse_x) <= kHoverPx;
        if (hot) near.push_back(&m);
        dl->AddLine(ImVec2(x, r.min.y), ImVec2(x, r.max.y), with_alpha(m.color, hot ? 0.95f : 0.55f), hot ? 2.0f : 1.0f);
        if (m.label.empty() || x - last_label < fs + 2) continue;
        const float w = ImGui::CalcTextSize(m.label.c_str()).x;
        if (w + 8 > r.max.y - r.min.y) continue;  // the plot is too short for it
        add_text_vertical(dl, ImVec2(x + 2, r.min.y + 4 + w), with_alpha(m.color, 1.0f), m.label.c_str());
        last_label = x;
    }
    return near;
}

// Crosshair, a marker on each visible series' point nearest the cursor's x, and the tooltip: one
// table row per series (label, x, y, raw y when smoothed, the series' own tooltip text).
void draw_hover(ImDrawList* dl, const std::vector<PlotSeries>& series, const std::vector<Curve>& curves,
                const PlotRect& r, const Axis& xa, const Axis& ya, const PlotOptions& opt,
                const std::vector<const PlotMarker*>& near) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    dl->AddLine(ImVec2(mouse.x, r.min.y), ImVec2(mouse.x, r.max.y), ImGui::GetColorU32(ImGuiCol_Text, 0.3f));
    const double cx = xa.at(mouse.x);
    const bool smoothed = opt.smoothing > 0;
    ImGui::BeginTooltip();
    const int columns = smoothed ? 5 : 4;
    if (ImGui::BeginTable("##hover", columns, ImGuiTableFlags_SizingFixedFit)) {
        ImGui::TableNextRow();
        const char* heads[] = {"", opt.x_label.empty() ? "x" : opt.x_label.c_str(),
                               opt.y_label.empty() ? "y" : opt.y_label.c_str(), "raw", ""};
        for (int c = 0; c < columns; ++c) {
            ImGui::TableSetColumnIndex(c);
            ImGui::TextDisabled("%s", heads[c == columns - 1 ? 4 : c]);
        }
        for (size_t i = 0; i < series.size(); ++i) {
            const PlotSeries& s = series[i];
            const Curve& cv = curves[i];
            if (!cv.raw || cv.raw->x.empty()) continue;
            const Series& axis_pts = *cv.raw;
            const size_t k = nearest_index(axis_pts, cx);
            const double x = s.data->x[k], y = s.data->y[k];
            const double shown = cv.smooth ? cv.smooth->y[k] : y;
            const double mx = axis_pts.x[k], my = ya.to_axis(shown);
            if (std::isfinite(mx) && std::isfinite(my))
                dl->AddCircleFilled(ImVec2(xa.px(mx), ya.px(my)), 3.5f, s.color);

            ImGui::TableNextRow();
            ImGui::TableSetColumnIndex(0);
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(s.color), "%s", s.label.c_str());
            ImGui::TableSetColumnIndex(1);
            ImGui::TextUnformatted(unit_text(x, opt.x_unit, 6).c_str());
            ImGui::TableSetColumnIndex(2);
            ImGui::TextUnformatted(std::isnan(shown) ? "gap" : unit_text(shown, opt.y_unit, 5).c_str());
            if (smoothed) {
                ImGui::TableSetColumnIndex(3);
                ImGui::TextDisabled("%s", std::isnan(y) ? "gap" : format_value(y, 5).c_str());
            }
            ImGui::TableSetColumnIndex(columns - 1);
            ImGui::TextDisabled("%s", s.tooltip.c_str());
        }
        ImGui::EndTable();
    }
    // The markers under the cursor, below the table: their hover text in their colour.
    for (const PlotMarker* m : near) {
        ImGui::Separator();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(with_alpha(m->color, 1.0f)), "%s", m->text.c_str());
        ImGui::PopTextWrapPos();
    }
    ImGui::EndTooltip();
}

}  // namespace

PlotRect plot(const char* id, std::vector<PlotSeries>& series, const PlotOptions& opt, PlotView& view, ImVec2 size) {
    ImGuiIO& io = ImGui::GetIO();
    const float fs = ImGui::GetFontSize();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    if (size.x <= 0) size.x = std::max(avail.x, 120.0f);
    if (size.y <= 0) size.y = std::max(avail.y, 80.0f);
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    ImGui::PushID(id);

    // 1. Prepare the visible series (cached smoothing) and fit the view to them if asked.
    const double alpha = std::clamp(opt.smoothing, 0.0, 0.9999);
    std::vector<Curve> curves(series.size());
    double fx_lo = kInf, fx_hi = -kInf, fy_lo = kInf, fy_hi = -kInf;
    for (size_t i = 0; i < series.size(); ++i) {
        if (!series[i].visible || !series[i].data) continue;
        curves[i] = prepare(series[i].data, series[i].smooth ? alpha : 0.0, opt.log_x);
        const Prepared& p = *curves[i].bounds;
        // A band widens the y-range the curve needs.
        for (const Series* b : {series[i].band_lo, series[i].band_hi}) {
            if (!b) continue;
            for (double y : b->y) {
                if (!std::isfinite(y) || (opt.log_y && y <= 0)) continue;
                const double v = opt.log_y ? std::log10(y) : y;
                fy_lo = std::min(fy_lo, v), fy_hi = std::max(fy_hi, v);
            }
        }
        fx_lo = std::min(fx_lo, p.x_lo);
        fx_hi = std::max(fx_hi, p.x_hi);
        const double ylo = opt.log_y ? p.y_pos : p.y_lo;
        if (ylo <= p.y_hi) {
            fy_lo = std::min(fy_lo, opt.log_y ? std::log10(ylo) : ylo);
            fy_hi = std::max(fy_hi, opt.log_y ? std::log10(p.y_hi) : p.y_hi);
        }
    }
    double ax_lo = kNaN, ax_hi = kNaN, ay_lo = kNaN, ay_hi = kNaN;  // the fit, axis space
    const bool fit_x = padded_range(fx_lo, fx_hi, kFitPadX, ax_lo, ax_hi);  // ui/logic/plot_fit.h
    const bool fit_y = padded_range(fy_lo, fy_hi, kFitPadY, ay_lo, ay_hi);
    Axis xa = make_axis(opt.log_x, view.x_lo, view.x_hi, ax_lo, ax_hi);
    Axis ya = make_axis(opt.log_y, view.y_lo, view.y_hi, ay_lo, ay_hi);
    if (view.auto_fit && fit_x) xa.lo = ax_lo, xa.hi = ax_hi;
    if (view.auto_fit && fit_y) ya.lo = ay_lo, ya.hi = ay_hi;

    // 2. Layout: the left margin holds the y tick labels (so it follows the y-range) and the y label.
    const float top = fs * 0.5f, right = fs * 1.5f;
    const float bottom = 5 + fs + (opt.x_label.empty() ? 0 : fs + 4) + 4;
    const float plot_h = size.y - top - bottom;
    const int y_target = std::clamp(int(plot_h / (fs * 2.5f)), 2, 10);
    float label_w = 0;
    for (const Tick& t : axis_ticks(ya, y_target, opt.y_unit))
        label_w = std::max(label_w, ImGui::CalcTextSize(t.label.c_str()).x);
    const float left = 4 + (opt.y_label.empty() ? 0 : fs + 6) + label_w + 6;
    PlotRect r{ImVec2(std::floor(origin.x + left), std::floor(origin.y + top)),
               ImVec2(std::floor(origin.x + size.x - right), std::floor(origin.y + size.y - bottom))};
    if (r.max.x - r.min.x < 10 || r.max.y - r.min.y < 10) {  // too small to draw: keep the space only
        ImGui::Dummy(size);
        ImGui::PopID();
        return r;
    }
    xa.p0 = r.min.x, xa.p1 = r.max.x;
    ya.p0 = r.max.y, ya.p1 = r.min.y;

    // 3. The legend's place: the corner over the fewest drawn points, or a strip the plot area gives
    // up on its right (ui/logic/legend_place.h). From the view before this frame's zoom or pan.
    size_t buckets = opt.buckets ? opt.buckets : size_t(std::max(1.0f, r.max.x - r.min.x));
    LegendSize ls;
    PxBox legend_box;
    if (opt.legend) ls = legend_size(series, opt, r.max.y - r.min.y);
    if (ls.series_rows > 0) {
        const LegendPlacement at = place_legend(PxBox{r.min.x, r.min.y, r.max.x, r.max.y},
                                                drawn_pixels(series, curves, xa, ya, buckets), ls.w, ls.h,
                                                kLegendMargin);
        legend_box = at.box;
        if (at.spot == LegendSpot::kOutsideRight) {
            r.max.x = std::floor(at.area.x1);
            xa.p1 = r.max.x;
            if (!opt.buckets) buckets = size_t(std::max(1.0f, r.max.x - r.min.x));
        }
    }

    // 4. Input: legend rows first (they win the hover), then the plot area: drag pans, wheel zooms.
    std::vector<LegendRow> rows;
    if (ls.series_rows > 0) rows = legend_buttons(series, ls, legend_box);
    ImGui::SetCursorScreenPos(r.min);
    ImGui::InvisibleButton("##area", ImVec2(r.max.x - r.min.x, r.max.y - r.min.y));
    const bool hovered = ImGui::IsItemHovered(), active = ImGui::IsItemActive();
    bool moved = false;
    if (active && (io.MouseDelta.x != 0 || io.MouseDelta.y != 0)) {
        xa.pan_px(io.MouseDelta.x);
        ya.pan_px(io.MouseDelta.y);
        moved = true;
    }
    if (hovered && io.MouseWheel != 0) {
        const double f = std::pow(kWheelZoom, double(io.MouseWheel));
        if (!io.KeyCtrl) xa.zoom(xa.at(io.MousePos.x), f);
        if (!io.KeyShift) ya.zoom(ya.at(io.MousePos.y), f);
        moved = true;
    }
    if (moved) view.auto_fit = false;
    if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) view.auto_fit = true;
    view.x_lo = xa.to_data(xa.lo), view.x_hi = xa.to_data(xa.hi);
    view.y_lo = ya.to_data(ya.lo), view.y_hi = ya.to_data(ya.hi);
    ImGui::SetCursorScreenPos(origin);
    ImGui::Dummy(size);  // the region's place in the window's layout

    // 5. Frame, grid, ticks, axis labels.
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(r.min, r.max, ImGui::GetColorU32(ImGuiCol_FrameBg, 0.35f));
    const int x_target = std::clamp(int((r.max.x - r.min.x) / (fs * 6)), 2, 12);
    draw_grid_and_ticks(dl, r, xa, ya, axis_ticks(xa, x_target, opt.x_unit), axis_ticks(ya, y_target, opt.y_unit));
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    if (!opt.x_label.empty()) {
        const float w = ImGui::CalcTextSize(opt.x_label.c_str()).x;
        dl->AddText(ImVec2((r.min.x + r.max.x - w) / 2, r.max.y + 5 + fs + 4), text, opt.x_label.c_str());
    }
    if (!opt.y_label.empty()) {
        const float w = ImGui::CalcTextSize(opt.y_label.c_str()).x;
        add_text_vertical(dl, ImVec2(origin.x + 4, (r.min.y + r.max.y + w) / 2), text, opt.y_label.c_str());
    }

    // 6. The series: each decimated to the visible x-range; the raw one faint under the smoothed one.
    dl->PushClipRect(r.min, r.max, true);
    bool drawn = false;
    for (size_t i = 0; i < series.size(); ++i)  // bands first: every curve stays on top of them
        if (curves[i].raw && series[i].band_lo && series[i].band_hi)
            draw_band(dl, *series[i].data, *series[i].band_lo, *series[i].band_hi, xa, ya, series[i].color);
    for (size_t i = 0; i < series.size(); ++i) {
        const Curve& cv = curves[i];
        if (!cv.raw) continue;
        const Series& raw = *cv.raw;
        if (raw.x.empty()) continue;
        drawn = true;
        const bool smooth = cv.smooth != nullptr;
        const ImU32 col = series[i].color;
        draw_curve(dl, decimate(raw, *cv.lod_raw, xa.lo, xa.hi, buckets), xa, ya,
                   smooth ? with_alpha(col, kRawAlpha) : col, smooth ? 1.0f : opt.line_width);
        if (smooth) draw_curve(dl, decimate(*cv.smooth, *cv.lod_smooth, xa.lo, xa.hi, buckets), xa, ya, col, 2.0f);
        if (series[i].points) draw_points(dl, raw, xa, ya, col);
    }
    if (!drawn) {
        const ImVec2 t = ImGui::CalcTextSize("no data");
        dl->AddText(ImVec2((r.min.x + r.max.x - t.x) / 2, (r.min.y + r.max.y - t.y) / 2),
                    ImGui::GetColorU32(ImGuiCol_TextDisabled), "no data");
    }
    const bool on_legend = std::any_of(rows.begin(), rows.end(), [](const LegendRow& row) { return row.hovered; });
    const bool hover = hovered && !active && !on_legend && drawn;
    std::vector<const PlotMarker*> near;
    if (opt.markers && drawn) near = draw_markers(dl, *opt.markers, r, xa, hover ? io.MousePos.x : float(kNaN));
    if (hover) draw_hover(dl, series, curves, r, xa, ya, opt, near);
    dl->PopClipRect();
    dl->AddRect(r.min, r.max, ImGui::GetColorU32(ImGuiCol_Border));

    // 7. The legend on top.
    draw_legend(dl, series, rows, opt, ls, legend_box);
    ImGui::PopID();
    return r;
}

ImU32 plot_palette(size_t i) {
    static const ImU32 kColors[] = {
        IM_COL32(31, 119, 180, 255),  IM_COL32(255, 127, 14, 255),  IM_COL32(44, 160, 44, 255),
        IM_COL32(214, 39, 40, 255),   IM_COL32(148, 103, 189, 255), IM_COL32(140, 86, 75, 255),
        IM_COL32(227, 119, 194, 255), IM_COL32(127, 127, 127, 255), IM_COL32(188, 189, 34, 255),
        IM_COL32(23, 190, 207, 255),
    };
    return kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
}

void plot_cache_clear() { curve_cache_clear(); }

}  // namespace tw::ui
