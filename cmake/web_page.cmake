# Writes OUT, the web page (server/web/index.html) with the bundled samples
# (samples/*.json) inlined where it says @SAMPLES@, as a JavaScript object
# {"planted-60": <graph>, ...}; then cmake/embed.cmake compiles OUT in.
#   cmake -DIN=server/web/index.html -DSAMPLES_DIR=samples -DOUT=FILE -P web_page.cmake
if(NOT IN OR NOT OUT OR NOT SAMPLES_DIR)
    message(FATAL_ERROR "web_page.cmake: IN, OUT and SAMPLES_DIR are required")
endif()
file(GLOB samples ${SAMPLES_DIR}/*.json)
list(SORT samples)
set(obj "{")
set(sep "")
foreach(f ${samples})
    get_filename_component(name ${f} NAME_WE)
    if(name MATCHES "solution")
        continue() # solutions are not graphs to submit
    endif()
    file(READ ${f} text)
    string(APPEND obj "${sep}\n\"${name}\": ${text}")
    set(sep ",")
endforeach()
string(APPEND obj "}")
file(READ ${IN} page)
string(REPLACE "@SAMPLES@" "${obj}" page "${page}")
file(WRITE ${OUT} "${page}")
