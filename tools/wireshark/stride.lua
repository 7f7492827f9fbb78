-- Wireshark dissector for STRIDE (docs/spec.md section 3), wire versions 1 and 2.
--
-- Install: copy this file into your personal Lua plugins folder (Wireshark: Help > About >
-- Folders > Personal Lua Plugins, usually ~/.local/lib/wireshark/plugins/), or load it for one
-- run with `tshark -X lua_script:tools/wireshark/stride.lua -r capture.pcap`.
-- STRIDE has no port of its own: packets are recognised by a heuristic (a 32-byte header whose
-- version is 1 or 2, whose flags are a legal combination and whose payload_len matches the UDP
-- payload), or on the UDP port set in Preferences > Protocols > STRIDE, or with
-- `-d udp.port==PORT,stride`. On a fixed port malformed packets are shown with expert info.

local stride = Proto("stride", "STRIDE transport")

local F = {
  SYN = 0x01, ACK = 0x02, NACK = 0x04, FIN = 0x08, RST = 0x10, DATA = 0x20, PSH = 0x40, CN = 0x80,
}

local pf = {
  version = ProtoField.uint8("stride.version", "Version", base.DEC),
  flags = ProtoField.uint8("stride.flags", "Flags", base.HEX),
  f_syn = ProtoField.bool("stride.flags.syn", "SYN", 8, nil, F.SYN),
  f_ack = ProtoField.bool("stride.flags.ack", "ACK", 8, nil, F.ACK),
  f_nack = ProtoField.bool("stride.flags.nack", "NACK", 8, nil, F.NACK),
  f_fin = ProtoField.bool("stride.flags.fin", "FIN", 8, nil, F.FIN),
  f_rst = ProtoField.bool("stride.flags.rst", "RST", 8, nil, F.RST),
  f_data = ProtoField.bool("stride.flags.data", "DATA", 8, nil, F.DATA),
  f_psh = ProtoField.bool("stride.flags.psh", "PSH", 8, nil, F.PSH),
  f_cn = ProtoField.bool("stride.flags.cn", "CN (v2) / reserved (v1)", 8, nil, F.CN),
  payload_len = ProtoField.uint16("stride.payload_len", "Payload length", base.DEC),
  dst_cid = ProtoField.uint32("stride.dst_cid", "Destination CID", base.HEX),
  src_cid = ProtoField.uint32("stride.src_cid", "Source CID", base.HEX),
  seq = ProtoField.uint32("stride.seq", "Sequence", base.DEC),
  ack = ProtoField.uint32("stride.ack", "Acknowledgement", base.DEC),
  tx_ts = ProtoField.uint32("stride.tx_ts", "Transmit timestamp (ns mod 2^32)", base.DEC),
  echo_stt = ProtoField.uint32("stride.echo_stt", "Echoed STT (ns)", base.DEC),
  window = ProtoField.uint16("stride.window", "Window (KiB)", base.DEC),
  reserved = ProtoField.uint16("stride.reserved", "Reserved (v1)", base.HEX),
  ce_count = ProtoField.uint16("stride.ce_count", "CE count (v2)", base.DEC),
  payload = ProtoField.bytes("stride.payload", "Payload"),
  caps = ProtoField.uint32("stride.caps", "Capabilities (SYN)", base.HEX),
  cap_selective = ProtoField.bool("stride.caps.selective", "Selective NACK", 32, nil, 0x1),
  sa_caps = ProtoField.uint16("stride.synack.caps", "Capabilities (SYN-ACK, bits 8..14)", base.HEX, nil, 0x7f00),
  sa_selective = ProtoField.bool("stride.synack.caps.selective", "Selective NACK", 16, nil, 0x0100),
  sa_grant = ProtoField.bool("stride.synack.grant", "Start grant present", 16, nil, 0x8000),
  sa_grant_shift = ProtoField.uint16("stride.synack.grant_shift", "Start grant: line >> g", base.DEC, nil, 0x003f),
  first_offset = ProtoField.uint32("stride.first_offset", "First-window offset (seq - ISN - 1, unconfirmed client)", base.DEC),
  range = ProtoField.bytes("stride.nack.range", "Missing range"),
  range_seq = ProtoField.uint32("stride.nack.range.seq", "Range start", base.DEC),
  range_len = ProtoField.uint32("stride.nack.range.len", "Range length", base.DEC),
}
stride.fields = pf

local ef = {
  truncated = ProtoExpert.new("stride.truncated", "Truncated: shorter than the 32-byte header",
    expert.group.MALFORMED, expert.severity.ERROR),
  bad_version = ProtoExpert.new("stride.bad_version", "Bad version (receivers drop it)",
    expert.group.MALFORMED, expert.severity.ERROR),
  bad_flags = ProtoExpert.new("stride.bad_flags", "Illegal flag combination (receivers drop it)",
    expert.group.MALFORMED, expert.severity.ERROR),
  bad_length = ProtoExpert.new("stride.bad_length",
    "Bad length: payload_len does not match the datagram, or a payload without DATA that is not whole NACK ranges (8 bytes each, at most 64)",
    expert.group.MALFORMED, expert.severity.ERROR),
  reserved = ProtoExpert.new("stride.reserved_nonzero", "Reserved field is not 0 (v1: must be sent as 0)",
    expert.group.PROTOCOL, expert.severity.WARN),
  ce_no_ack = ProtoExpert.new("stride.ce_count_without_ack", "ce_count is not 0 in a packet without ACK (v2)",
    expert.group.PROTOCOL, expert.severity.WARN),
}
stride.experts = { ef.truncated, ef.bad_version, ef.bad_flags, ef.bad_length, ef.reserved, ef.ce_no_ack }

stride.prefs.port = Pref.uint("UDP port", 0, "Decode this UDP port as STRIDE (0: heuristic only)")

-- Legal flag combinations (spec section 3.1) and their names.
local legal = {
  [F.SYN] = "SYN",
  [F.SYN + F.ACK] = "SYN-ACK",
  [F.ACK] = "ACK",
  [F.ACK + F.DATA] = "DATA",
  [F.ACK + F.DATA + F.PSH] = "DATA",
  [F.ACK + F.NACK] = "NACK",
  [F.ACK + F.FIN] = "FIN",
  [F.RST] = "RST",
  [F.RST + F.ACK] = "RST-ACK",
}

-- The packet's name if `flags` is legal for `version`, else nil.
local function kind(version, flags)
  if version == 2 and flags == F.ACK + F.CN then
    return "ACK+CN"
  end
  return legal[flags]
end

local function flag_names(flags)
  local names = {}
  for _, n in ipairs({ "SYN", "ACK", "NACK", "FIN", "RST", "DATA", "PSH", "CN" }) do
    if bit.band(flags, F[n]) ~= 0 then
      names[#names + 1] = n
    end
  end
  return table.concat(names, "|")
end

function stride.dissector(tvb, pinfo, tree)
  local len = tvb:len()
  pinfo.cols.protocol = "STRIDE"
  local t = tree:add(stride, tvb(), "STRIDE")
  if len < 32 then
    t:add_proto_expert_info(ef.truncated)
    pinfo.cols.info = "STRIDE truncated (" .. len .. " bytes)"
    return len
  end
  local version = tvb(0, 1):uint()
  local flags = tvb(1, 1):uint()
  local plen = tvb(2, 2):uint()
  local vi = t:add(pf.version, tvb(0, 1))
  local fi = t:add(pf.flags, tvb(1, 1))
  fi:append_text(" (" .. flag_names(flags) .. ")")
  for _, f in ipairs({ pf.f_syn, pf.f_ack, pf.f_nack, pf.f_fin, pf.f_rst, pf.f_data, pf.f_psh, pf.f_cn }) do
    fi:add(f, tvb(1, 1))
  end
  local li = t:add(pf.payload_len, tvb(2, 2))
  t:add(pf.dst_cid, tvb(4, 4))
  t:add(pf.src_cid, tvb(8, 4))
  t:add(pf.seq, tvb(12, 4))
  t:add(pf.ack, tvb(16, 4))
  t:add(pf.tx_ts, tvb(20, 4))
  t:add(pf.echo_stt, tvb(24, 4))
  t:add(pf.window, tvb(28, 2))
  local last = tvb(30, 2):uint()
  if version == 2 then
    local ci = t:add(pf.ce_count, tvb(30, 2))
    if last ~= 0 and bit.band(flags, F.ACK) == 0 then
      ci:add_proto_expert_info(ef.ce_no_ack)
    end
  else
    local ri = t:add(pf.reserved, tvb(30, 2))
    if last ~= 0 and version == 1 then
      ri:add_proto_expert_info(ef.reserved)
    end
  end
  local is_nack = bit.band(flags, F.NACK) ~= 0
  if is_nack and len > 32 then
    -- Selective NACK: (seq, len) pairs naming the missing ranges.
    local o = 32
    while o + 8 <= len do
      local ri = t:add(pf.range, tvb(o, 8))
      ri:set_text(string.format("Missing range: seq=%u len=%u", tvb(o, 4):uint(), tvb(o + 4, 4):uint()))
      ri:add(pf.range_seq, tvb(o, 4))
      ri:add(pf.range_len, tvb(o + 4, 4))
      o = o + 8
    end
  elseif len > 32 then
    t:add(pf.payload, tvb(32))
  end
  local is_synack = bit.band(flags, F.SYN) ~= 0 and bit.band(flags, F.ACK) ~= 0
  if is_synack then
    -- SYN-ACK (spec 5.1, 8.6): echo_stt is the SYN's STT; ce_count holds the start grant and
    -- the listener's capability bits.
    local ci = t:add(pf.sa_caps, tvb(30, 2))
    ci:add(pf.sa_selective, tvb(30, 2))
    t:add(pf.sa_grant, tvb(30, 2))
    t:add(pf.sa_grant_shift, tvb(30, 2))
  elseif bit.band(flags, F.SYN) ~= 0 then
    local ci = t:add(pf.caps, tvb(24, 4))
    ci:add(pf.cap_selective, tvb(24, 4))
  elseif bit.band(flags, F.DATA + F.FIN) ~= 0 and tvb(24, 4):uint() ~= 0 then
    -- Spec 5: DATA and FIN of a client not yet confirmed carry their offset from ISN + 1, so
    -- the stateless listener can verify its cookie from any packet of the first window.
    t:add(pf.first_offset, tvb(24, 4))
  end
  local name = kind(version, flags)
  if version ~= 1 and version ~= 2 then
    vi:add_proto_expert_info(ef.bad_version)
    name = "bad version"
  elseif name == nil then
    fi:add_proto_expert_info(ef.bad_flags)
    name = "bad flags"
  end
  local is_data = bit.band(flags, F.DATA) ~= 0
  local shape_ok
  if is_data then
    shape_ok = plen > 0
  elseif is_nack then
    shape_ok = plen % 8 == 0 and plen <= 512
  else
    shape_ok = plen == 0
  end
  if plen ~= len - 32 or not shape_ok then
    li:add_proto_expert_info(ef.bad_length)
    name = name .. ", bad length"
  end
  local info = string.format("%s seq=%u", name, tvb(12, 4):uint())
  if bit.band(flags, F.ACK) ~= 0 then
    info = info .. string.format(" ack=%u win=%uKiB", tvb(16, 4):uint(), tvb(28, 2):uint())
  end
  if is_nack and plen > 0 then
    info = info .. " ranges=" .. math.floor(plen / 8)
  elseif plen > 0 then
    info = info .. " len=" .. plen
  end
  if is_synack then
    local c = tvb(30, 2):uint()
    if bit.band(c, 0x7f00) ~= 0 then
      info = info .. string.format(" caps=0x%x", bit.rshift(bit.band(c, 0x7f00), 8))
    end
    if bit.band(c, 0x8000) ~= 0 then
      info = info .. string.format(" grant=line>>%u", bit.band(c, 0x3f))
    end
    if tvb(24, 4):uint() ~= 0 then
      info = info .. " syn_stt=" .. tvb(24, 4):uint()
    end
  elseif bit.band(flags, F.SYN) ~= 0 then
    if tvb(24, 4):uint() ~= 0 then
      info = info .. string.format(" caps=0x%x", tvb(24, 4):uint())
    end
  elseif tvb(24, 4):uint() ~= 0 then
    info = info .. " stt=" .. tvb(24, 4):uint()
  end
  t:append_text(string.format(" v%d, %s", version, info))
  pinfo.cols.info = "STRIDE " .. info
  return len
end

-- Heuristic: only well-formed STRIDE datagrams, so other UDP traffic is left alone.
local function heuristic(tvb, pinfo, tree)
  local len = tvb:len()
  if len < 32 then
    return false
  end
  local version = tvb(0, 1):uint()
  if version ~= 1 and version ~= 2 then
    return false
  end
  local flags = tvb(1, 1):uint()
  local plen = tvb(2, 2):uint()
  if kind(version, flags) == nil or plen ~= len - 32 then
    return false
  end
  if bit.band(flags, F.DATA) ~= 0 then
    if plen == 0 then
      return false
    end
  elseif bit.band(flags, F.NACK) ~= 0 then
    if plen % 8 ~= 0 or plen > 512 then
      return false
    end
  elseif plen ~= 0 then
    return false
  end
  stride.dissector(tvb, pinfo, tree)
  return true
end
stride:register_heuristic("udp", heuristic)

local registered_port = 0
function stride.prefs_changed()
  local udp = DissectorTable.get("udp.port")
  if registered_port ~= 0 then
    udp:remove(registered_port, stride)
  end
  registered_port = stride.prefs.port
  if registered_port ~= 0 then
    udp:add(registered_port, stride)
  end
end
DissectorTable.get("udp.port"):add_for_decode_as(stride)
