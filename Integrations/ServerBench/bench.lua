-- wrk's mix for run.sh: 90% GET, 10% PUT, over SERVER_BENCH_ITEMS items drawn Zipf-like (item k
-- about 1/(k+1) as often as item 0). The route is wrk's first script argument: "plain" or
-- "cached" (wrk ... -s bench.lua URL -- cached).
local count = tonumber(os.getenv("SERVER_BENCH_ITEMS") or "20000")
local started = 0

function setup(thread)
    started = started + 1
    thread:set("number", started)
end

local cumulative, total, route, written = {}, 0, "plain", 0

function init(args)
    route = args[1] or "plain"
    math.randomseed(number * 7919)
    for rank = 1, count do
        total = total + 1 / rank
        cumulative[rank] = total
    end
end

local function item()
    local x, low, high = math.random() * total, 1, count
    while low < high do
        local middle = math.floor((low + high) / 2)
        if cumulative[middle] < x then low = middle + 1 else high = middle end
    end
    return low - 1
end

function request()
    local id = item()
    if math.random() < 0.1 then
        written = written + 1
        return wrk.format("PUT", "/" .. route .. "/" .. id, nil, "Title " .. number .. "-" .. written)
    end
    return wrk.format("GET", "/" .. route .. "/" .. id)
end
