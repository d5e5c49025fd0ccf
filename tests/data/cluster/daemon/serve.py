print("daemon payload")
