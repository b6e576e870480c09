print("hlsorigin: under construction")
