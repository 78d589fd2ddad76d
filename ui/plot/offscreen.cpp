// The plot widget without a window (offscreen.h).
#include "ui/plot/offscreen.h"

#include <algorithm>

#include "ui/plot/png.h"

namespace tw::ui {
namespace {

constexpr int kFrames = 2;  // the first frame settles ImGui's per-window state; the last is drawn

// A private ImGui context, current for its lifetime, with the font atlas as a SoftTexture.
class OffscreenContext {
public:
    OffscreenContext(int width, int height, bool light)
        : prev_(ImGui::GetCurrentContext()), ctx_(ImGui::CreateContext()) {
        ImGui::SetCurrentContext(ctx_);
        ImGuiIO& io = ImGui::GetIO();
        io.IniFilename = nullptr;  // never write imgui.ini into the caller's directory
        io.LogFilename = nullptr;
        io.BackendRendererName = "thinwire_soft_render";
        io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;  // > 64k vertices per window
        io.DisplaySize = ImVec2(float(width), float(height));
        io.DeltaTime = 1.0f / 60.0f;
        unsigned char* px = nullptr;
        io.Fonts->GetTexDataAsAlpha8(&px, &font_.width, &font_.height);
        font_.alpha = px;
        io.Fonts->SetTexID(&font_);
        if (light) {
            ImGui::StyleColorsLight();
            ImGui::GetStyle().Colors[ImGuiCol_WindowBg] = ImVec4(1, 1, 1, 1);
        } else {
            ImGui::StyleColorsDark();
        }
        ImGui::GetStyle().WindowBorderSize = 0;
    }
    ~OffscreenContext() {
        ImGui::DestroyContext(ctx_);
        ImGui::SetCurrentContext(prev_);
    }
    OffscreenContext(const OffscreenContext&) = delete;
    OffscreenContext& operator=(const OffscreenContext&) = delete;

private:
    ImGuiContext* prev_;
    ImGuiContext* ctx_;
    SoftTexture font_;
};

}  // namespace

RgbaImage render_plot_image(std::vector<PlotSeries>& series, const PlotOptions& opt, const OffscreenOptions& off) {
    const int w = std::max(off.width, 1), h = std::max(off.height, 1);
    RgbaImage img;
    plot_cache_clear();
    {
        OffscreenContext ctx(w, h, off.light);
        PlotView view;
        for (int frame = 0; frame < kFrames; ++frame) {
            ImGui::NewFrame();
            ImGui::SetNextWindowPos(ImVec2(0, 0));
            ImGui::SetNextWindowSize(ImVec2(float(w), float(h)));
            ImGui::Begin(
                "##offscreen_plot", nullptr,
                ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoScrollWithMouse);
            plot("plot", series, opt, view);
            ImGui::End();
            ImGui::Render();
        }
        const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
        img = RgbaImage(w, h, ImGui::ColorConvertFloat4ToU32(ImVec4(bg.x, bg.y, bg.z, 1)));
        render_draw_data(*ImGui::GetDrawData(), img);
    }
    plot_cache_clear();
    return img;
}

Status render_plot_png(const std::string& path, std::vector<PlotSeries>& series, const PlotOptions& opt,
                       const OffscreenOptions& off) {
    const RgbaImage img = render_plot_image(series, opt, off);
    return write_png(path, img.width, img.height, 4, img.rgba.data(), img.width * 4);
}

}  // namespace tw::ui
