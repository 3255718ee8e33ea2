public import ArgumentParser
public import Results

/// `sweep --send-path auto|packet|udp`.
extension SweepSendPathChoice: ExpressibleByArgument {}
