-- wrk's read-mostly mix for run.sh: 90% GET, 10% PUT, over FLEET_IDS items drawn Zipf-like
-- (item k about 1/(k+1) as often as item 0); thread n sends to port n of FLEET_PORTS, so
-- "wrk -t3" on three ports spreads one stream over three instances, as a load balancer would.
local ports = {}
for port in string.gmatch(os.getenv("FLEET_PORTS") or "8080", "%d+") do table.insert(ports, port) end
local count = tonumber(os.getenv("FLEET_IDS") or "1000")
local started = 0

function setup(thread)
    started = started + 1
    thread.addr = wrk.lookup("127.0.0.1", ports[(started - 1) % #ports + 1])[1]
    thread:set("number", started)
end

local cumulative, total, written = {}, 0, 0

function init(args)
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
        return wrk.format("PUT", "/items/" .. id, nil, tostring(number * 100000000 + written))
    end
    return wrk.format("GET", "/items/" .. id)
end
