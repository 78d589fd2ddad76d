// OpenGL 3 window; see gl_window.h.
#include "ui/plot/gl_window.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <cstdio>

namespace tw::ui {

GLFWwindow* open_gl3_window(int width, int height, const char* title, const char** glsl) {
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    *glsl = "#version 150";
    if (GLFWwindow* w = glfwCreateWindow(width, height, title, nullptr, nullptr)) return w;
    glfwDefaultWindowHints();
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
    *glsl = "#version 130";
    return glfwCreateWindow(width, height, title, nullptr, nullptr);
}

GLFWwindow* start_imgui_window(int width, int height, const char* title, const char* program, int swap_interval) {
    if (!glfwInit()) {
        std::fprintf(stderr, "%s: cannot initialise GLFW (no display? run under xvfb-run -a)\n", program);
        return nullptr;
    }
    const char* glsl = nullptr;
    GLFWwindow* window = open_gl3_window(width, height, title, &glsl);
    if (!window) {
        std::fprintf(stderr, "%s: cannot open an OpenGL 3.3 or 3.0 window\n", program);
        glfwTerminate();
        return nullptr;
    }
    glfwMakeContextCurrent(window);
    glfwSwapInterval(swap_interval);
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;
    ImGui::StyleColorsDark();
    ImGui_ImplGlfw_InitForOpenGL(window, true);
    ImGui_ImplOpenGL3_Init(glsl);
    return window;
}

void end_imgui_window(GLFWwindow* window) {
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window);
    glfwTerminate();
}

void draw_imgui_frame(GLFWwindow* window, int& fb_w, int& fb_h) {
    glfwGetFramebufferSize(window, &fb_w, &fb_h);
    glViewport(0, 0, fb_w, fb_h);
    glClearColor(0.08f, 0.08f, 0.09f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

}  // namespace tw::ui
