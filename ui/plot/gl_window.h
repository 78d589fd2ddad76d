// The workbench's and the plot demo's window: an OpenGL 3 context for ImGui's OpenGL3 backend.
#pragma once

struct GLFWwindow;

namespace tw::ui {

// OpenGL 3.3 core (GLSL 150) first: ImGui needs GL ≥ 3.2 for 16-bit indices past 64k vertices per
// window. Falls back to 3.0 (GLSL 130), which Mesa's llvmpipe also serves. `glsl` receives the
// GLSL version line for ImGui_ImplOpenGL3_Init. Null if neither context can be made.
GLFWwindow* open_gl3_window(int width, int height, const char* title, const char** glsl);

}  // namespace tw::ui
