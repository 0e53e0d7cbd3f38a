# CUDA is optional. The runtime is linked statically so libcgdr.so loads on machines without
# the toolkit; the driver (libcuda.so.1) is never linked, only reached at run time.
set(CGDR_HAVE_CUDA OFF)
if(CGDR_WITH_CUDA)
  find_package(CUDAToolkit)
  if(CUDAToolkit_FOUND)
    set(CGDR_HAVE_CUDA ON)
    message(STATUS "cgdr: CUDA ${CUDAToolkit_VERSION} (runtime static, driver at run time)")
  else()
    message(WARNING "cgdr: CUDA toolkit not found; building the host-only library")
  endif()
endif()

# Adds the CUDA runtime (static) to a target when CUDA is on.
function(cgdr_use_cuda target)
  if(CGDR_HAVE_CUDA)
    target_compile_definitions(${target} PUBLIC CGDR_HAVE_CUDA=1)
    target_link_libraries(${target} PUBLIC CUDA::cudart_static)
  endif()
endfunction()
