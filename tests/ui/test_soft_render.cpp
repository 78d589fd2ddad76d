// The CPU rasteriser of ImGui's draw data (ui/plot/soft_render.h) and the off-screen plot
// (ui/plot/offscreen.h): known draw lists rasterised and checked pixel by pixel, no window.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>

#include "ui/plot/offscreen.h"
#include "ui/plot/soft_render.h"

namespace tw::ui {
namespace {

constexpr int kW = 64, kH = 48;
const ImU32 kWhite = IM_COL32(255, 255, 255, 255);

// An ImGui context whose frame draws `paint` into the background draw list (full-screen clip,
// the font atlas bound as a SoftTexture), rasterised onto white.
class Canvas {
public:
    Canvas() : ctx_(ImGui::CreateContext()) {
        ImGui::SetCurrentContext(ctx_);
        ImGuiIO& io = ImGui::GetIO();
        io.IniFilename = nullptr;
        io.DisplaySize = ImVec2(kW, kH);
        io.DeltaTime = 1.0f / 60.0f;
        unsigned char* px = nullptr;
        io.Fonts->GetTexDataAsAlpha8(&px, &font_.width, &font_.height);
        font_.alpha = px;
        io.Fonts->SetTexID(&font_);
    }
    ~Canvas() { ImGui::DestroyContext(ctx_); }

    RgbaImage draw(const std::function<void(ImDrawList*)>& paint) {
        ImGui::NewFrame();
        paint(ImGui::GetBackgroundDrawList());
        ImGui::Render();
        RgbaImage img(kW, kH, kWhite);
        render_draw_data(*ImGui::GetDrawData(), img);
        return img;
    }

private:
    ImGuiContext* ctx_;
    SoftTexture font_;
};

int channel(ImU32 c, int shift) { return int((c >> shift) & 0xFF); }

bool near(ImU32 a, ImU32 b, int tol) {
    for (int s : {IM_COL32_R_SHIFT, IM_COL32_G_SHIFT, IM_COL32_B_SHIFT})
        if (std::abs(channel(a, s) - channel(b, s)) > tol) return false;
    return true;
}

int count(const RgbaImage& img, const std::function<bool(int, int, ImU32)>& pred) {
    int n = 0;
    for (int y = 0; y < img.height; ++y)
        for (int x = 0; x < img.width; ++x) n += pred(x, y, img.at(x, y)) ? 1 : 0;
    return n;
}

TEST(SoftRender, FilledRectCoversExactlyItsPixels) {
    Canvas c;
    const ImU32 red = IM_COL32(200, 30, 40, 255);
    const RgbaImage img = c.draw([&](ImDrawList* dl) { dl->AddRectFilled(ImVec2(10, 10), ImVec2(30, 20), red); });
    // Pixels whose centres are inside [10, 30) × [10, 20): exactly 20 × 10, exactly the colour.
    for (int y = 0; y < kH; ++y)
        for (int x = 0; x < kW; ++x) {
            const bool inside = x >= 10 && x < 30 && y >= 10 && y < 20;
            ASSERT_EQ(img.at(x, y), inside ? red : kWhite) << "pixel " << x << "," << y;
        }
}

TEST(SoftRender, SharedDiagonalIsBlendedOnceWithoutCracks) {
    // A translucent rectangle is two triangles sharing a diagonal: every pixel must be blended
    // exactly once (twice would be darker on the diagonal, never would leave a white crack).
    Canvas c;
    const ImU32 half_blue = IM_COL32(0, 0, 255, 128);
    const RgbaImage img =
        c.draw([&](ImDrawList* dl) { dl->AddRectFilled(ImVec2(3.3f, 5.7f), ImVec2(41.9f, 37.2f), half_blue); });
    const ImU32 once = IM_COL32(127, 127, 255, 255);  // 255·(1 − 128/255) + 0, rounded; blue stays 255
    int inside = 0;
    for (int y = 0; y < kH; ++y)
        for (int x = 0; x < kW; ++x) {
            const ImU32 p = img.at(x, y);
            if (p == kWhite) continue;
            ++inside;
            ASSERT_EQ(p, once) << "pixel " << x << "," << y;
        }
    // Centres inside [3.3, 41.9) × [5.7, 37.2): x 3..41 (39 columns), y 6..36 (31 rows).
    EXPECT_EQ(inside, 39 * 31);
}

TEST(SoftRender, EdgesThroughPixelCentresFollowGlsFillRule) {
    // Corners on pixel centres: every centre on the outline and on the diagonal is on an edge. GL
    // (y up) owns left and top edges, i.e. left and bottom ones in these y-down pixels, so the
    // rectangle covers columns 2..41 and rows 3..42, each pixel once, the diagonal included.
    Canvas c;
    const ImU32 half_red = IM_COL32(255, 0, 0, 128);
    const RgbaImage img =
        c.draw([&](ImDrawList* dl) { dl->AddRectFilled(ImVec2(2.5f, 2.5f), ImVec2(42.5f, 42.5f), half_red); });
    const ImU32 once = IM_COL32(255, 127, 127, 255);
    for (int y = 0; y < kH; ++y)
        for (int x = 0; x < kW; ++x) {
            const bool inside = x >= 2 && x <= 41 && y >= 3 && y <= 42;
            ASSERT_EQ(img.at(x, y), inside ? once : kWhite) << "pixel " << x << "," << y;
        }
}

TEST(SoftRender, AntiAliasedLineHasFullColourOnItsRowAndFadesAway) {
    Canvas c;
    const ImU32 green = IM_COL32(20, 160, 60, 255);
    // AddLine offsets by half a pixel: this 2 px line covers rows 19 and 20.
    const RgbaImage img =
        c.draw([&](ImDrawList* dl) { dl->AddLine(ImVec2(8, 19.5f), ImVec2(56, 19.5f), green, 2.0f); });
    for (int x = 12; x < 52; ++x) {
        EXPECT_TRUE(near(img.at(x, 19), green, 8)) << "x " << x << ": " << std::hex << img.at(x, 19);
        EXPECT_TRUE(near(img.at(x, 20), green, 8)) << "x " << x << ": " << std::hex << img.at(x, 20);
        EXPECT_EQ(img.at(x, 16), kWhite) << "x " << x;  // beyond the 1 px fringe
        EXPECT_EQ(img.at(x, 23), kWhite) << "x " << x;
    }
    // Nothing left or right of the ends (plus the fringe).
    EXPECT_EQ(count(img, [](int x, int, ImU32 p) { return (x < 6 || x > 58) && p != kWhite; }), 0);
}

TEST(SoftRender, ClipRectangleCutsTheShape) {
    Canvas c;
    const ImU32 black = IM_COL32(0, 0, 0, 255);
    const RgbaImage img = c.draw([&](ImDrawList* dl) {
        dl->PushClipRect(ImVec2(20, 0), ImVec2(40, kH));
        dl->AddRectFilled(ImVec2(0, 10), ImVec2(kW, 20), black);
        dl->PopClipRect();
    });
    EXPECT_EQ(count(img, [&](int x, int y, ImU32 p) { return p == black && x >= 20 && x < 40 && y >= 10 && y < 20; }),
              20 * 10);
    EXPECT_EQ(count(img, [&](int, int, ImU32 p) { return p != kWhite; }), 20 * 10);
}

TEST(SoftRender, TextSamplesTheFontAtlas) {
    // Glyphs are textured quads: without the atlas's alpha they would be solid boxes.
    Canvas c;
    const ImU32 black = IM_COL32(0, 0, 0, 255);
    const RgbaImage img = c.draw([&](ImDrawList* dl) { dl->AddText(ImVec2(4, 4), black, "HI"); });
    const int dark = count(img, [&](int, int, ImU32 p) { return near(p, black, 40); });
    const int marked = count(img, [&](int, int, ImU32 p) { return p != kWhite; });
    const ImVec2 box = ImGui::CalcTextSize("HI");
    EXPECT_GT(dark, 10);                            // strokes are drawn
    EXPECT_LT(marked, int(box.x * box.y) * 2 / 3);  // but not the glyphs' whole boxes
    EXPECT_EQ(count(img, [&](int x, int y,
                             ImU32 p) { return p != kWhite && (x >= 4 + int(box.x) + 1 || y >= 4 + int(box.y) + 1); }),
              0);
}

TEST(SoftRender, OffscreenPlotDrawsEachSeriesInItsColourAndRestoresTheContext) {
    ImGuiContext* mine = ImGui::CreateContext();
    ImGui::SetCurrentContext(mine);
    Series a, b;
    for (int i = 0; i <= 20; ++i) {
        a.x.push_back(i), a.y.push_back(6 - 0.1 * i);
        b.x.push_back(i), b.y.push_back(5 + 0.05 * i);
    }
    std::vector<PlotSeries> series(2);
    series[0].label = "run a", series[0].data = &a, series[0].color = plot_palette(0);
    series[1].label = "run b", series[1].data = &b, series[1].color = plot_palette(1);
    PlotOptions opt;
    opt.x_label = "step";
    opt.y_label = "loss";
    opt.line_width = 2;
    const RgbaImage img = render_plot_image(series, opt, OffscreenOptions{400, 300, true});
    EXPECT_EQ(ImGui::GetCurrentContext(), mine);
    ImGui::DestroyContext(mine);
    ASSERT_EQ(img.width, 400);
    ASSERT_EQ(img.height, 300);
    for (size_t i = 0; i < series.size(); ++i) {
        const int n = count(img, [&](int, int, ImU32 p) { return near(p, series[i].color, 24); });
        EXPECT_GT(n, 200) << series[i].label;  // a 2 px line across most of 400 px, plus its legend swatch
    }
    // White background, dark text (tick labels, axis labels).
    EXPECT_EQ(img.at(1, 1), kWhite);
    EXPECT_GT(count(img, [](int, int, ImU32 p) { return near(p, IM_COL32(0, 0, 0, 255), 40); }), 100);
}

// Lowest row (largest y) holding a pixel near `col` in columns [x0, x1); -1 if none.
int lowest_row(const RgbaImage& img, ImU32 col, int x0, int x1) {
    for (int y = img.height - 1; y >= 0; --y)
        for (int x = x0; x < x1; ++x)
            if (near(img.at(x, y), col, 30)) return y;
    return -1;
}

// A validation series (one point per round) ends at its last recorded value although the plot
// smooths: drawn with smooth = false and dots, its last dot sits on a reference line at that value.
// Smoothed (as before), a drop from 8.0 to 7.2 at the last point would end near 7.6: far above.
TEST(SoftRender, AValidationSeriesIsNeverSmoothedAndEndsAtItsLastValue) {
    Series val, ref;
    for (int i = 1; i <= 6; ++i) val.x.push_back(i * 50), val.y.push_back(i < 6 ? 8.0 : 7.2);
    ref.x = {50, 300}, ref.y = {7.2, 7.2};
    auto draw = [&](bool smooth) {
        std::vector<PlotSeries> series(2);
        series[0].label = "val", series[0].data = &val, series[0].color = plot_palette(0);
        series[0].smooth = smooth, series[0].points = !smooth;
        series[1].label = "7.2", series[1].data = &ref, series[1].color = plot_palette(1), series[1].smooth = false;
        PlotOptions opt;
        opt.smoothing = 0.8;
        opt.legend = false;
        return render_plot_image(series, opt, OffscreenOptions{400, 300, true});
    };
    const RgbaImage raw = draw(false), smoothed = draw(true);
    const int ref_row = lowest_row(raw, plot_palette(1), 300, 390);
    ASSERT_GT(ref_row, 0);
    const int end_raw = lowest_row(raw, plot_palette(0), 360, 395);
    EXPECT_NEAR(end_raw, ref_row, 4) << "the drawn last point is not at the stored last value";
    const int end_smooth = lowest_row(smoothed, plot_palette(0), 360, 395);
    EXPECT_LT(end_smooth, ref_row - 40) << "the smoothed control should end well above 7.2";
}

// A band between lo and hi is filled at a fifth of the curve's colour, under the curve.
TEST(SoftRender, ABandIsFilledBetweenItsBounds) {
    Series mid, lo, hi;
    for (int i = 0; i <= 40; ++i) {
        mid.x.push_back(i), mid.y.push_back(5);
        lo.x.push_back(i), lo.y.push_back(4);
        hi.x.push_back(i), hi.y.push_back(6);
    }
    std::vector<PlotSeries> series(1);
    series[0].label = "run", series[0].data = &mid, series[0].color = plot_palette(0);
    series[0].band_lo = &lo, series[0].band_hi = &hi;
    PlotOptions opt;
    opt.legend = false;
    const RgbaImage img = render_plot_image(series, opt, OffscreenOptions{400, 300, true});
    const ImU32 c = plot_palette(0);
    auto tint = [&](int shift) { return 255 - (255 - channel(c, shift)) / 5; };  // 20% over white
    const ImU32 band = IM_COL32(tint(IM_COL32_R_SHIFT), tint(IM_COL32_G_SHIFT), tint(IM_COL32_B_SHIFT), 255);
    const int n = count(img, [&](int, int, ImU32 p) { return near(p, band, 12); });
    EXPECT_GT(n, 10000) << "the band covers a third of the plot's height across its width";
    std::vector<PlotSeries> bare(1);
    bare[0] = series[0];
    bare[0].band_lo = bare[0].band_hi = nullptr;
    const RgbaImage none = render_plot_image(bare, opt, OffscreenOptions{400, 300, true});
    EXPECT_LT(count(none, [&](int, int, ImU32 p) { return near(p, band, 12); }), 100);
}

// A line rising from the bottom-left to the top-right corner runs under a legend in the top-right
// corner. The legend goes to the empty top-left corner: every pixel of the curve's colour without
// the legend keeps it with the legend, and what the legend changes lies in the left half.
TEST(SoftRender, TheLegendLeavesARisingCurveUncovered) {
    Series up;
    for (int i = 0; i <= 40; ++i) up.x.push_back(i), up.y.push_back(i);
    auto draw = [&](bool legend) {
        std::vector<PlotSeries> series(1);
        series[0].label = "rising curve", series[0].data = &up;
        series[0].color = plot_palette(3), series[0].smooth = false;
        PlotOptions opt;
        opt.line_width = 2;
        opt.legend = legend;
        return render_plot_image(series, opt, OffscreenOptions{400, 300, true});
    };
    const RgbaImage with = draw(true), without = draw(false);
    const ImU32 col = plot_palette(3);
    int curve = 0, lost = 0;
    for (int y = 0; y < without.height; ++y)
        for (int x = 0; x < without.width; ++x) {
            if (!near(without.at(x, y), col, 24)) continue;
            ++curve;
            lost += near(with.at(x, y), col, 24) ? 0 : 1;
        }
    EXPECT_GT(curve, 400);  // a 2 px line across the plot's diagonal
    EXPECT_EQ(lost, 0) << "the legend covers the curve";
    const int changed = count(with, [&](int x, int y, ImU32 p) { return p != without.at(x, y); });
    const int changed_right = count(with, [&](int x, int y, ImU32 p) { return x >= 200 && p != without.at(x, y); });
    EXPECT_GT(changed, 500) << "no legend drawn";
    EXPECT_EQ(changed_right, 0) << "the legend is not in the top-left corner";
}

// Two lines crossing as an X reach all four corners: the legend moves right of the plot area,
// which gives up the legend's width, so the falling line ends that much further left.
TEST(SoftRender, TheLegendGoesRightOfThePlotWhenEveryCornerHasData) {
    Series up, down;
    for (int i = 0; i <= 40; ++i) up.x.push_back(i), up.y.push_back(i), down.x.push_back(i), down.y.push_back(40 - i);
    auto draw = [&](bool legend) {
        std::vector<PlotSeries> series(2);
        series[0].label = "up", series[0].data = &up, series[0].color = plot_palette(0), series[0].smooth = false;
        series[1].label = "down", series[1].data = &down, series[1].color = plot_palette(1), series[1].smooth = false;
        PlotOptions opt;
        opt.line_width = 2;
        opt.legend = legend;
        return render_plot_image(series, opt, OffscreenOptions{400, 300, true});
    };
    const RgbaImage with = draw(true), without = draw(false);
    // The falling line's rightmost pixel in the lower half (below any legend row).
    auto right_end = [&](const RgbaImage& img) {
        int r = -1;
        for (int y = img.height / 2; y < img.height; ++y)
            for (int x = 0; x < img.width; ++x)
                if (near(img.at(x, y), plot_palette(1), 24)) r = std::max(r, x);
        return r;
    };
    const int end_without = right_end(without), end_with = right_end(with);
    ASSERT_GT(end_without, 300);
    // The legend: swatch 1.2 × 13 px + 6 + "down" (~28 px) + 2 × 4 padding, plus 8 px apart: > 40 px.
    EXPECT_LT(end_with, end_without - 40);
}

}  // namespace
}  // namespace tw::ui
