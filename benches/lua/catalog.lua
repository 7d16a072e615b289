-- wrk script of benches/catalog-load.sh: one kind of request, its offset and query drawn at
-- random for every request. Settings from the environment:
--   BENCH_PATH        the target, where {offset} and {q} are replaced
--   BENCH_MAX_OFFSET  offsets are drawn from 0..BENCH_MAX_OFFSET (in steps of BENCH_STEP)
--   BENCH_STEP        default 1
--   BENCH_QUERIES     comma-separated queries for {q}
--   BENCH_TOKEN       a bearer token (none for Subsonic targets, which carry their own auth)
--   BENCH_HEADER      one more header, "Name: value" (Polaris wants Accept-Version)
-- Prints one line: requests, errors, p50, p95, p99 (ms), requests per second.

local template = os.getenv("BENCH_PATH")
local max_offset = tonumber(os.getenv("BENCH_MAX_OFFSET") or "0")
local step = tonumber(os.getenv("BENCH_STEP") or "1")
local token = os.getenv("BENCH_TOKEN") or ""
local header_name, header_value = string.match(os.getenv("BENCH_HEADER") or "", "^([^:]+):%s*(.*)$")
local queries = {}
for q in string.gmatch(os.getenv("BENCH_QUERIES") or "", "([^,]+)") do
  table.insert(queries, q)
end
if #queries == 0 then queries = { "" } end

local counter = 0
setup = function(thread)
  counter = counter + 1
  thread:set("seed", counter)
end

init = function(args)
  math.randomseed(os.time() * 1000 + (seed or 0))
end

request = function()
  local offset = math.random(0, math.floor(max_offset / step)) * step
  local q = queries[math.random(#queries)]
  -- A query may hold "%" (URL-encoded): escaped, as gsub reads it in a replacement.
  local path = template:gsub("{offset}", tostring(offset)):gsub("{q}", (q:gsub("%%", "%%%%")))
  local headers = {}
  if token ~= "" then headers["Authorization"] = "Bearer " .. token end
  if header_name then headers[header_name] = header_value end
  return wrk.format("GET", path, headers)
end

done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout
  io.write(string.format("RESULT %d %d %.2f %.2f %.2f %.0f\n", summary.requests, errors,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000,
    summary.requests / (summary.duration / 1e6)))
end
