#pragma once
// What the control ports' HTTP server and client (http_server.cpp, http_client.cpp) share of
// Boost.Beast and Asio: the headers and the short names both use.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>

namespace daqflow::runtime::http_beast {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

}  // namespace daqflow::runtime::http_beast
