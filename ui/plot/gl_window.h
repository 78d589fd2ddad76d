// The workbench's and the plot demo's window: an OpenGL 3 context for ImGui's OpenGL3 backend, the
// ImGui session on it, and the end of a frame. Everything here runs on the thread that made the
// window (GLFW and the GL context are single-threaded); the window belongs to the caller between
// start_imgui_window and end_imgui_window.
#pragma once

struct GLFWwindow;

namespace tw::ui {

// OpenGL 3.3 core (GLSL 150) first: ImGui needs GL ≥ 3.2 for 16-bit indices past 64k vertices per
// window. Falls back to 3.0 (GLSL 130), which Mesa's llvmpipe also serves. `glsl` receives the
// GLSL version line for ImGui_ImplOpenGL3_Init. Null if neither context can be made.
GLFWwindow* open_gl3_window(int width, int height, const char* title, const char** glsl);

// GLFW, an OpenGL 3 window (open_gl3_window) made current with `swap_interval` (1 = vsync, 0 =
// as fast as it can), and an ImGui context on it with no ini file (the layouts are fixed; nothing
// is written next to the user's files), the dark style, and the GLFW and OpenGL3 backends. Null
// when there is no display or no context, after printing why on stderr prefixed by `program`.
GLFWwindow* start_imgui_window(int width, int height, const char* title, const char* program, int swap_interval);
// The backends, the ImGui context, the window and GLFW, in that order.
void end_imgui_window(GLFWwindow* window);

// Draws ImGui's rendered frame (after ImGui::Render) over the windows' background, filling the
// framebuffer, whose size in pixels `fb_w` × `fb_h` receive. The caller swaps the buffers.
void draw_imgui_frame(GLFWwindow* window, int& fb_w, int& fb_h);

}  // namespace tw::ui
