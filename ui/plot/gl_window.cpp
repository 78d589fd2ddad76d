// OpenGL 3 window; see gl_window.h.
#include "ui/plot/gl_window.h"

#include <GLFW/glfw3.h>

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

}  // namespace tw::ui
